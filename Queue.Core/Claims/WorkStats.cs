using System.Collections.Concurrent;
using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Sql;

namespace Queue.Core.Claims;

public sealed record WorkerInfo(string Name, DateTime FirstSeenAt, DateTime LastSeenAt, long Claims, long Completions, long Failures);

public sealed record TenantItemCounts(string Tenant, long Ready, long Leased, long Done, long Dead, long Cancelled);

/// <summary>
/// Per-tenant claim/completion counts and per-worker last-seen, counted in memory on the hot path and added to
/// tenant_counters and workers every few seconds (the Scheduler's minute snapshots and the Admin read those).
/// </summary>
public sealed class WorkStats(MySqlDataSource db, ReadSource reads, TimeProvider clock)
{
    private readonly ConcurrentDictionary<long, TenantDelta> tenants = new();
    private readonly ConcurrentDictionary<string, WorkerDelta> workers = new(StringComparer.Ordinal);

    public void Claimed(long tenantId, string? worker, int count)
    {
        Interlocked.Add(ref tenants.GetOrAdd(tenantId, static _ => new TenantDelta()).Claims, count);
        if (worker is not null)
        {
            var w = workers.GetOrAdd(worker, static _ => new WorkerDelta());
            Interlocked.Add(ref w.Claims, count);
            Interlocked.Exchange(ref w.LastSeenTicks, clock.GetUtcNow().UtcTicks);
        }
    }

    /// <summary>A worker asked for work (whether or not it got any): it is alive.</summary>
    public void Seen(string? worker)
    {
        if (worker is not null)
        {
            Interlocked.Exchange(ref workers.GetOrAdd(worker, static _ => new WorkerDelta()).LastSeenTicks, clock.GetUtcNow().UtcTicks);
        }
    }

    public void Completed(long tenantId, int count) =>
        Interlocked.Add(ref tenants.GetOrAdd(tenantId, static _ => new TenantDelta()).Completions, count);

    /// <summary>Adds the counts since the last flush to the database; on failure they are kept for the next one.</summary>
    public async Task FlushAsync(CancellationToken ct)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        var tenantRows = new List<TenantRow>();
        foreach (var (id, d) in tenants)
        {
            var claims = Interlocked.Exchange(ref d.Claims, 0);
            var completions = Interlocked.Exchange(ref d.Completions, 0);
            if (claims != 0 || completions != 0)
            {
                tenantRows.Add(new TenantRow(id, claims, completions, now));
            }
        }
        var workerRows = new List<WorkerRow>();
        foreach (var (name, d) in workers)
        {
            var seen = Interlocked.Exchange(ref d.LastSeenTicks, 0);
            var claims = Interlocked.Exchange(ref d.Claims, 0);
            if (seen != 0 || claims != 0)
            {
                workerRows.Add(new WorkerRow(name, seen != 0 ? new DateTime(seen, DateTimeKind.Utc) : now, claims, 0, 0));
            }
        }
        if (tenantRows.Count == 0 && workerRows.Count == 0)
        {
            return;
        }
        try
        {
            await Retry.OnDeadlockAsync(async c =>
            {
                await using var conn = await db.OpenConnectionAsync(c);
                await using var tx = await conn.BeginReadCommittedAsync(c);
                // Sorted keys: two processes flushing at once lock rows in the same order and cannot deadlock.
                await conn.ExecuteAsync(new CommandDefinition(ClaimSql.AddTenantCounters, tenantRows.OrderBy(r => r.TenantId), tx, cancellationToken: c));
                await conn.ExecuteAsync(new CommandDefinition(ClaimSql.AddWorkerCounters, workerRows.OrderBy(r => r.Name, StringComparer.Ordinal), tx, cancellationToken: c));
                await tx.CommitAsync(c);
                return true;
            }, ct);
        }
        catch (Exception ex) when (ex is MySqlException or OperationCanceledException or TimeoutException)
        {
            foreach (var r in tenantRows)
            {
                var d = tenants.GetOrAdd(r.TenantId, static _ => new TenantDelta());
                Interlocked.Add(ref d.Claims, r.Claims);
                Interlocked.Add(ref d.Completions, r.Completions);
            }
            foreach (var r in workerRows)
            {
                var d = workers.GetOrAdd(r.Name, static _ => new WorkerDelta());
                Interlocked.Add(ref d.Claims, r.Claims);
                Interlocked.CompareExchange(ref d.LastSeenTicks, r.LastSeen.Ticks, 0);
            }
            throw;
        }
        if (workers.Count > 10_000)
        {
            workers.Clear(); // names are caller-chosen; never let them grow this map without bound
        }
    }

    /// <summary>Items per tenant and state, from the jobs counters plus the live leases of open jobs; never a scan of items. A metrics aggregate, so it reads through <see cref="ReadSource"/>.</summary>
    public async Task<IReadOnlyList<TenantItemCounts>> ItemCountsAsync(CancellationToken ct)
    {
        await using var conn = await reads.OpenAsync(ct);
        var totals = (await conn.QueryAsync<TotalsRow>(new CommandDefinition(ClaimSql.ItemsByTenant, cancellationToken: ct))).AsList();
        var leased = (await conn.QueryAsync<LeasedRow>(new CommandDefinition(ClaimSql.LeasedByTenant,
            new { Now = clock.GetUtcNow().UtcDateTime }, cancellationToken: ct))).ToDictionary(r => r.Tenant, r => r.Leased, StringComparer.Ordinal);
        return totals.Select(t =>
        {
            var l = leased.GetValueOrDefault(t.Tenant);
            return new TenantItemCounts(t.Tenant, Math.Max(0, t.Active - l), l, t.Done, t.Dead, t.Cancelled);
        }).ToList();
    }

    private sealed record TotalsRow(string Tenant, long Active, long Done, long Dead, long Cancelled);

    private sealed record LeasedRow(string Tenant, long Leased);

    private sealed class TenantDelta
    {
        public long Claims;
        public long Completions;
    }

    private sealed class WorkerDelta
    {
        public long Claims;
        public long LastSeenTicks;
    }

    private sealed record TenantRow(long TenantId, long Claims, long Completions, DateTime Now);

    private sealed record WorkerRow(string Name, DateTime LastSeen, long Claims, long Completions, long Failures);
}
