using Dapper;
using MySqlConnector;
using Queue.Core.Sql;

namespace Queue.Core.Claims;

/// <summary>One (job, task) lane of the ordering, as a selector hands it to the claim engine.</summary>
/// <param name="Quota">
/// How many items the engine may take from this lane in one round; null means no limit. A lane that used up its quota
/// may be offered again when the engine asks the selector after the round. A fair selector uses it to keep its shares
/// item by item even when one transaction claims for many workers.
/// </param>
/// <param name="Override">A technician's override lane: served before every tenant's turn, here and in the claim-ahead buffer.</param>
public sealed record Lane(long JobId, string Task, long TenantId, long Value, int? Quota = null, bool Override = false);

/// <param name="Tasks">The worker's task filter; empty accepts every task.</param>
/// <param name="Limit">At most this many lanes; the engine asks again with a larger limit when these ran dry.</param>
/// <param name="Wanted">Items the claim still wants: a fair selector shares that many out in one round of quotas.</param>
/// <param name="Visited">Lanes this claim has drained or skipped already: a selector that offers a few lanes per
/// tenant offers the next ones instead (they still look claimable until the claim closes).</param>
public sealed record LaneQuery(IReadOnlyList<string> Tasks, DateTime Now, int Limit, int Wanted = 1,
    IReadOnlySet<(long JobId, string Task)>? Visited = null);

/// <summary>
/// The replaceable step of a claim that decides which lanes come first. The engine calls it with the claim's
/// connection (its reads are consistent reads, the same inside the claim's transaction or before it begins: see
/// <see cref="ClaimTransaction"/>), takes the lowest item ids from the lanes in the order given, and reports every take through
/// <see cref="Claimed"/>, so that a stateful policy (the tenant-fair share, docs/DESIGN.md "Fairness") sees each item it gave away, even
/// when one transaction serves a whole batch of workers.
/// </summary>
public interface ILaneSelector
{
    Task<IReadOnlyList<Lane>> SelectAsync(MySqlConnection conn, LaneQuery query, CancellationToken ct);

    /// <summary>
    /// Items were taken from a lane of <paramref name="tenantId"/>. Called inside the claim transaction, before it
    /// commits, so the next <see cref="SelectAsync"/> of the same batch already sees it; a transaction retried after a
    /// deadlock (rare) reports its items again, so a fair selector's counts may run ahead by one batch.
    /// </summary>
    void Claimed(long tenantId, int count);

    /// <summary>
    /// A tenant's place in the turn order of handouts from the claim-ahead buffer, lowest first (ties to the lower
    /// tenant id); null when the policy takes no turns between tenants (seed: the buffer hands out in lane order). Items
    /// claimed ahead are charged through <see cref="Claimed"/> when they are handed out, not when they are reserved.
    /// </summary>
    double? TurnOf(long tenantId);

    /// <summary>
    /// The turn of a tenant whose next item is in the database, none of it held: where the next claim ranks it. A fair
    /// policy lifts a tenant that idled to the others' level less the return credit, so the pass it idled at would put
    /// it ahead of every tenant served meanwhile (a flood's first claim, beside a small tenant whose job went straight
    /// into the buffer, took 7 callers' items while the small job's items waited here). By default <see cref="TurnOf"/>.
    /// </summary>
    double? TurnInDatabaseOf(long tenantId) => TurnOf(tenantId);

    /// <summary>
    /// Where a tenant no claim has seen yet would be ranked when its work shows up (a fair policy: the others' level less
    /// the return credit); null when the policy takes no turns.
    /// </summary>
    double? TurnOfNewcomer() => null;

    /// <summary>How far one item handed to <paramref name="tenantId"/> moves its <see cref="TurnOf"/>.</summary>
    double TurnLength(long tenantId) => 1;

    /// <summary>Whether the policy takes turns between tenants: the claim-ahead buffer then keeps one sub-buffer per tenant.</summary>
    bool TakesTurns { get; }

    /// <summary>
    /// These tenants have work now that no claim saw: a new job's items handed straight to the claim-ahead buffer
    /// (docs/DESIGN.md "New work straight into the buffer"), beside the tenants already held there. A fair policy lifts
    /// one that idled, as a claim that saw its work would, so that it banks no credit.
    /// </summary>
    void Backlogged(IReadOnlyCollection<long> tenants)
    {
    }
}

/// <summary>docs/CONTRACT.md's order: lowest value first, ties to the older job; straight off the ordering indexes.</summary>
public sealed class SeedLaneSelector : ILaneSelector
{
    public async Task<IReadOnlyList<Lane>> SelectAsync(MySqlConnection conn, LaneQuery query, CancellationToken ct)
    {
        if (query.Tasks.Count == 0)
        {
            return (await conn.QueryAsync<LaneRow>(new CommandDefinition(ClaimSql.SeedLanesAny,
                new { query.Now, query.Limit }, cancellationToken: ct))).Select(r => r.ToLane()).ToList();
        }
        // One index walk per task (each already in order), merged here: a multi-task IN over the index would sort.
        var lanes = new List<Lane>();
        foreach (var task in query.Tasks)
        {
            lanes.AddRange((await conn.QueryAsync<LaneRow>(new CommandDefinition(ClaimSql.SeedLanesForTask,
                new { Task = task, query.Now, query.Limit }, cancellationToken: ct))).Select(r => r.ToLane()));
        }
        if (query.Tasks.Count > 1)
        {
            lanes.Sort(static (a, b) => a.Value != b.Value ? a.Value.CompareTo(b.Value)
                : a.JobId != b.JobId ? a.JobId.CompareTo(b.JobId) : string.CompareOrdinal(a.Task, b.Task));
            if (lanes.Count > query.Limit)
            {
                lanes.RemoveRange(query.Limit, lanes.Count - query.Limit);
            }
        }
        return lanes;
    }

    public void Claimed(long tenantId, int count)
    {
    }

    public double? TurnOf(long tenantId) => null;

    public bool TakesTurns => false;

    private sealed record LaneRow(long JobId, string Task, long TenantId, long Value)
    {
        public Lane ToLane() => new(JobId, Task, TenantId, Value);
    }
}
