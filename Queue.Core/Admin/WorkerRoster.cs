using Dapper;
using MySqlConnector;
using Queue.Core.Claims;
using Queue.Core.Sql;

namespace Queue.Core.Admin;

/// <summary>The Admin's workers view: who holds leases now, merged with every worker the claim path has seen.</summary>
internal static class WorkerRoster
{
    public static async Task<IReadOnlyList<LeaseHolder>> HoldersAsync(MySqlConnection conn, DateTime now, CancellationToken ct) =>
        Holders(await LeaseRowsAsync(conn, now, ct), await KnownAsync(conn, ct));

    /// <summary>Lease holders first (by live leases), then recently seen workers that hold nothing.</summary>
    public static List<LeaseHolder> Holders(List<LeaseRow> rows, List<WorkerInfo> known) => Merge(ByWorker(rows), known);

    /// <summary>Workers the claim path has seen (the claims area's <c>workers</c> table), most recent first.</summary>
    public static async Task<List<WorkerInfo>> KnownAsync(MySqlConnection conn, CancellationToken ct) =>
        (await conn.QueryAsync<WorkerInfo>(new CommandDefinition(ClaimSql.Workers, new { Limit = 500 }, cancellationToken: ct))).AsList();

    /// <summary>Lease holders first (by live leases), then recently seen workers that hold nothing.</summary>
    private static List<LeaseHolder> Merge(List<LeaseHolder> holders, List<WorkerInfo> known)
    {
        var info = known.ToDictionary(k => k.Name, StringComparer.Ordinal);
        var merged = holders.Select(h => info.TryGetValue(h.Worker, out var k)
            ? new LeaseHolder
            {
                Worker = h.Worker, Live = h.Live, Expired = h.Expired, Jobs = h.Jobs, Since = h.Since, NextExpiry = h.NextExpiry,
                LastSeen = h.LastSeen is { } l && l > k.LastSeenAt ? l : k.LastSeenAt,
                FirstSeen = k.FirstSeenAt, Claims = k.Claims, Completions = k.Completions, Failures = k.Failures,
            }
            : h).ToList();
        var holding = holders.Select(h => h.Worker).ToHashSet(StringComparer.Ordinal);
        merged.AddRange(known.Where(k => !holding.Contains(k.Name)).Select(k => new LeaseHolder
        {
            Worker = k.Name, LastSeen = k.LastSeenAt, FirstSeen = k.FirstSeenAt, Claims = k.Claims, Completions = k.Completions, Failures = k.Failures,
        }));
        return merged;
    }

    public static async Task<List<LeaseRow>> LeaseRowsAsync(MySqlConnection conn, DateTime now, CancellationToken ct) =>
        (await conn.QueryAsync<LeaseRow>(new CommandDefinition(AdminSql.LeaseHolders, new { Now = now }, cancellationToken: ct))).AsList();

    /// <summary>The query groups by tenant and worker; a worker serves every tenant, so fold the tenants together.</summary>
    private static List<LeaseHolder> ByWorker(List<LeaseRow> rows) =>
        rows.GroupBy(r => r.Worker, StringComparer.Ordinal)
            .Select(g => new LeaseHolder
            {
                Worker = g.Key,
                Live = g.Sum(r => r.Live),
                Expired = g.Sum(r => r.Expired),
                Jobs = g.Sum(r => r.Jobs), // a job belongs to one tenant, so per-tenant job counts add up
                Since = g.Min(r => r.Since),
                LastSeen = g.Max(r => r.LastSeen),

                NextExpiry = g.Min(r => r.NextExpiry),
            })
            .OrderByDescending(h => h.Live).ThenBy(h => h.Worker, StringComparer.Ordinal)
            .ToList();

    /// <summary>Leases per tenant and worker, as the query groups them.</summary>
    public sealed class LeaseRow
    {
        public long TenantId { get; init; }

        public string Worker { get; init; } = "";

        public long Live { get; init; }

        public long Expired { get; init; }

        public long Jobs { get; init; }

        public DateTime Since { get; init; }

        public DateTime LastSeen { get; init; }

        public DateTime? NextExpiry { get; init; }
    }
}
