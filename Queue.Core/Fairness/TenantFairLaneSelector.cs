using Dapper;
using MySqlConnector;
using Queue.Core.Claims;
using Queue.Core.Sql;

namespace Queue.Core.Fairness;

/// <summary>
/// <c>Ordering:Policy = tenant-fair</c>: claimable override lanes first, in override order; then the tenant whose turn
/// it is by weighted fair sharing of claims (<see cref="FairShare"/>); then that tenant's head lane in seed order
/// (value, job id), and the engine takes its lowest item ids. Each claim round offers every tenant with work (up to
/// <see cref="FairnessSql.HeadsPerQuery"/> per query, in turn order) one lane with a quota of its weight's worth of
/// claims, so a batch of claims is split across tenants by the same rule as single claims.
/// <para>Cost per round: one override range, one round trip of index probes for the tenants with lanes (<see cref="LaneTenants"/>), and one head query per
/// eight tenants; never a scan of jobs or items. With one tenant it returns that tenant's lanes in seed order.</para>
/// </summary>
public sealed class TenantFairLaneSelector(FairShare fair, TimeProvider clock) : ILaneSelector
{
    private static readonly TimeSpan WeightsFor = TimeSpan.FromSeconds(5);

    private readonly Lock gate = new();
    private Dictionary<long, int> weights = [];
    private DateTimeOffset weightsAt = DateTimeOffset.MinValue;
    private readonly LaneTenants laneTenants = new();

    public FairShare Share => fair;

    public async Task<IReadOnlyList<Lane>> SelectAsync(MySqlConnection conn, LaneQuery query, CancellationToken ct)
    {
        var lanes = new List<Lane>();
        var overrides = query.Tasks.Count == 0
            ? await conn.QueryAsync<LaneRow>(Cmd(FairnessSql.OverrideLanes, new { query.Now, query.Limit }, ct))
            : await conn.QueryAsync<LaneRow>(Cmd(FairnessSql.OverrideLanesForTasks, new { query.Now, query.Limit, query.Tasks }, ct));
        lanes.AddRange(overrides.Select(r => r.ToLane(null) with { Override = true }));

        var tenants = new HashSet<long>();
        if (query.Tasks.Count == 0)
        {
            await laneTenants.AddAsync(conn, null, tenants, ct);
        }
        else
        {
            foreach (var task in query.Tasks)
            {
                await laneTenants.AddAsync(conn, task, tenants, ct);
            }
        }
        if (tenants.Count == 0)
        {
            return lanes;
        }
        await RefreshWeightsAsync(conn, tenants, ct);
        if (tenants.Count == 1)
        {
            // Nobody to share with: the tenant's own lanes in seed order, as many as the engine asked for.
            var only = tenants.First();
            var own = await TenantLanesAsync(conn, only, query, ct);
            if (own.Count > 0)
            {
                fair.Backlogged([only]);
            }
            lanes.AddRange(own);
            return lanes;
        }

        var heads = new Dictionary<long, Lane>();
        var ranked = fair.Rank(tenants);
        for (var i = 0; i < ranked.Count && heads.Count < FairnessSql.HeadsPerQuery; i += FairnessSql.HeadsPerQuery)
        {
            var chunk = ranked.Skip(i).Take(FairnessSql.HeadsPerQuery).ToList();
            foreach (var head in await HeadsAsync(conn, chunk, query, ct))
            {
                heads[head.TenantId] = head;
            }
        }
        var backlogged = ranked.Where(heads.ContainsKey).ToList();
        fair.Backlogged(backlogged);
        if (backlogged.Count == 1)
        {
            // The others' lanes have nothing claimable now (leased, held in the claim-ahead buffer, backing off): nobody
            // to alternate with here, so the tenant's lanes in seed order, as with one tenant. In quotas of one turn per
            // round, the first claim of a flood beside a small job held in the buffer took its 8 callers' items one
            // round (nine statements) each: 40 ms, while the callers waited.
            var own = await TenantLanesAsync(conn, backlogged[0], query, ct);
            if (own.Count > 0)
            {
                lanes.AddRange(own);
                return lanes;
            }
        }
        // One round of weighted round robin over what the claim asks to share (LaneQuery.Wanted, at least one turn
        // each): each tenant's quota is its weight's share of it. The engine asks for the workers' leases still to
        // fill, then for all the claim-ahead reservations at once: a round of one turn each per item walked a round
        // (five round trips) per item while two tenants had work, about 100 round trips in one transaction that every
        // waiting caller waited for. A tenant with fewer items than its quota leaves its lanes drained, and the next
        // round offers the others what is left.
        var picks = Math.Max(backlogged.Sum(Weight), query.Wanted);
        foreach (var (tenant, count) in fair.Plan(backlogged, Weight, picks))
        {
            lanes.Add(heads[tenant] with { Quota = count });
        }
        return lanes;
    }

    public void Claimed(long tenantId, int count) => fair.Charge(tenantId, count, Weight(tenantId));

    public double? TurnOf(long tenantId) => fair.OwnPassOf(tenantId);

    public double? TurnInDatabaseOf(long tenantId) => fair.PassOf(tenantId);

    public double? TurnOfNewcomer() => fair.NewcomerPass;

    public double TurnLength(long tenantId) => 1.0 / Weight(tenantId);

    public bool TakesTurns => true;

    public void Backlogged(IReadOnlyCollection<long> tenants) => fair.Backlogged(tenants);

    public int Weight(long tenantId)
    {
        lock (gate)
        {
            return weights.TryGetValue(tenantId, out var w) && w > 0 ? w : 1;
        }
    }

    /// <summary>Tenant weights, re-read every few seconds, and at once when a tenant shows up that the cache does not know.</summary>
    private async Task RefreshWeightsAsync(MySqlConnection conn, IEnumerable<long> tenants, CancellationToken ct)
    {
        var now = clock.GetUtcNow();
        lock (gate)
        {
            if (now - weightsAt < WeightsFor && now >= weightsAt && tenants.All(weights.ContainsKey))
            {
                return;
            }
        }
        var rows = await conn.QueryAsync<(long Id, int Weight)>(Cmd(FairnessSql.TenantWeights, null, ct));
        var map = rows.ToDictionary(r => r.Id, r => r.Weight);
        lock (gate)
        {
            weights = map;
            weightsAt = now;
        }
    }

    private static async Task<List<Lane>> TenantLanesAsync(MySqlConnection conn, long tenant, LaneQuery query, CancellationToken ct)
    {
        if (query.Tasks.Count == 0)
        {
            return (await conn.QueryAsync<LaneRow>(Cmd(FairnessSql.TenantLanes, new { TenantId = tenant, query.Now, query.Limit }, ct)))
                .Select(r => r.ToLane(null)).ToList();
        }
        var lanes = new List<Lane>();
        foreach (var task in query.Tasks)
        {
            lanes.AddRange((await conn.QueryAsync<LaneRow>(Cmd(FairnessSql.TenantLanesForTask,
                new { Task = task, TenantId = tenant, query.Now, query.Limit }, ct))).Select(r => r.ToLane(null)));
        }
        lanes.Sort(SeedOrder);
        return lanes.Take(query.Limit).ToList();
    }

    /// <summary>
    /// Lanes fetched per tenant beyond the first at most: past this many lanes visited in one claim, a tenant whose
    /// first lanes it all drained may be offered none, and the claim ends with what it has.
    /// </summary>
    private const int MaxSkippedHeads = 32;

    /// <summary>
    /// Each tenant's first claimable lane in seed order (across the worker's tasks) that this claim has not visited yet,
    /// for up to eight tenants.
    /// </summary>
    private static async Task<List<Lane>> HeadsAsync(MySqlConnection conn, List<long> chunk, LaneQuery query, CancellationToken ct)
    {
        var visited = query.Visited;
        var args = new DynamicParameters();
        args.Add("Per", 1 + Math.Min(visited?.Count ?? 0, MaxSkippedHeads));
        for (var k = 0; k < FairnessSql.HeadsPerQuery; k++)
        {
            args.Add("T" + k.ToString(System.Globalization.CultureInfo.InvariantCulture), k < chunk.Count ? chunk[k] : -1L);
        }
        args.Add("Now", query.Now);
        var found = new List<Lane>();
        if (query.Tasks.Count == 0)
        {
            found.AddRange((await conn.QueryAsync<LaneRow>(Cmd(FairnessSql.TenantHeads, args, ct))).Select(r => r.ToLane(null)));
        }
        else
        {
            foreach (var task in query.Tasks)
            {
                args.Add("Task", task);
                found.AddRange((await conn.QueryAsync<LaneRow>(Cmd(FairnessSql.TenantHeadsForTask, args, ct))).Select(r => r.ToLane(null)));
            }
        }
        found.RemoveAll(l => visited?.Contains((l.JobId, l.Task)) == true);
        found.Sort(SeedOrder);
        return found.GroupBy(l => l.TenantId).Select(g => g.First()).ToList();
    }

    private static int SeedOrder(Lane a, Lane b) =>
        a.Value != b.Value ? a.Value.CompareTo(b.Value) : a.JobId != b.JobId ? a.JobId.CompareTo(b.JobId) : string.CompareOrdinal(a.Task, b.Task);

    private static CommandDefinition Cmd(string sql, object? args, CancellationToken ct) => new(sql, args, cancellationToken: ct);

    private sealed record LaneRow(long JobId, string Task, long TenantId, long Value)
    {
        public Lane ToLane(int? quota) => new(JobId, Task, TenantId, Value, quota);
    }
}
