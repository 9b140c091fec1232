using Dapper;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Sql;

namespace Queue.Core.Maintenance;

public sealed record RetentionResult(int Jobs, long Items, long Documents, long Snapshots);

/// <summary>
/// Deletes the items (with their error history) and documents of jobs that finished more than
/// <see cref="MaintenanceOptions.RetentionDays"/> ago, in small transactions. Only finished jobs are touched, whose
/// items are never claimed, so claims neither wait on it nor see it. The jobs rows stay, with their counters, so a
/// job's status can still be read. Snapshots older than the retention are deleted too.
/// </summary>
public sealed partial class RetentionService(MySqlDataSource db, TimeProvider clock, IOptions<MaintenanceOptions> options, ILogger<RetentionService> logger)
{
    private static readonly DateTime Epoch = new(2000, 1, 1, 0, 0, 0, DateTimeKind.Utc);

    public async Task<RetentionResult> RunAsync(CancellationToken ct)
    {
        var o = options.Value;
        var started = clock.GetTimestamp();
        var cutoff = clock.GetUtcNow().UtcDateTime - TimeSpan.FromDays(o.RetentionDays);
        int jobs = 0;
        long items = 0, documents = 0;
        await using (var conn = await db.OpenConnectionAsync(ct))
        {
            var cursor = await conn.QuerySingleAsync<Cursor>(new CommandDefinition(MaintenanceSql.RetentionCursor, cancellationToken: ct));
            var cursorAt = cursor.CursorAt ?? Epoch;
            var cursorId = cursor.CursorId ?? 0;
            while (clock.GetElapsedTime(started) < o.RetentionMaxRun)
            {
                var batch = (await conn.QueryAsync<FinishedJob>(new CommandDefinition(MaintenanceSql.FinishedJobs,
                    new { Cutoff = cutoff, CursorAt = cursorAt, CursorId = cursorId, Limit = 100 }, cancellationToken: ct))).AsList();
                if (batch.Count == 0)
                {
                    break;
                }
                foreach (var job in batch)
                {
                    var (n, whole) = await PurgeAsync(conn, job.Id, cutoff, MaintenanceSql.ItemBatch, o.RetentionItemBatch,
                        [MaintenanceSql.DeleteItemErrors, MaintenanceSql.DeleteItems], o.RetentionPause, ct);
                    items += n;
                    if (whole)
                    {
                        (n, whole) = await PurgeAsync(conn, job.Id, cutoff, MaintenanceSql.DocumentBatch, o.RetentionDocumentBatch,
                            [MaintenanceSql.DeleteDocumentContent, MaintenanceSql.DeleteDocuments], o.RetentionPause, ct);
                        documents += n;
                    }
                    // A job reopened halfway (an Admin requeue) is left alone; it comes round again when it finishes anew.
                    (cursorAt, cursorId) = (job.FinishedAt, job.Id);
                    await conn.ExecuteAsync(new CommandDefinition(MaintenanceSql.SaveRetentionCursor,
                        new { CursorAt = cursorAt, CursorId = cursorId, Now = clock.GetUtcNow().UtcDateTime }, cancellationToken: ct));
                    jobs += whole ? 1 : 0;
                    if (clock.GetElapsedTime(started) >= o.RetentionMaxRun)
                    {
                        break;
                    }
                }
            }
        }
        long snapshots = 0;
        while (!ct.IsCancellationRequested)
        {
            await using var conn = await db.OpenConnectionAsync(ct);
            var n = await conn.ExecuteAsync(new CommandDefinition(MaintenanceSql.DeleteOldSnapshots, new { Cutoff = cutoff, Limit = 5000 }, cancellationToken: ct));
            snapshots += n;
            if (n < 5000)
            {
                break;
            }
        }
        if (jobs > 0 || snapshots > 0)
        {
            Purged(logger, jobs, items, documents, snapshots);
        }
        return new RetentionResult(jobs, items, documents, snapshots);
    }

    /// <summary>
    /// Deletes one job's rows of one kind, a batch per transaction, until none is left; false as soon as the job is no
    /// longer finished before the cutoff. Each batch first locks the job row and checks it, so an Admin requeue (which
    /// locks the same row) either comes before a batch, which then stops, or waits until that batch has committed.
    /// </summary>
    private static async Task<(long Deleted, bool Whole)> PurgeAsync(MySqlConnection conn, long jobId, DateTime cutoff, string select, int limit,
        string[] deletes, TimeSpan pause, CancellationToken ct)
    {
        long total = 0;
        while (true)
        {
            var ids = (await conn.QueryAsync<long>(new CommandDefinition(select, new { JobId = jobId, Limit = limit }, cancellationToken: ct))).AsList();
            if (ids.Count == 0)
            {
                return (total, true);
            }
            var purgeable = await Retry.OnDeadlockAsync(async c =>
            {
                await using var tx = await conn.BeginReadCommittedAsync(c);
                if (await conn.ExecuteScalarAsync<long?>(new CommandDefinition(MaintenanceSql.LockPurgeableJob,
                    new { JobId = jobId, Cutoff = cutoff }, tx, cancellationToken: c)) is null)
                {
                    await tx.RollbackAsync(c);
                    return false;
                }
                foreach (var sql in deletes)
                {
                    await conn.ExecuteAsync(new CommandDefinition(sql, new { Ids = ids }, tx, cancellationToken: c));
                }
                await tx.CommitAsync(c);
                return true;
            }, ct);
            if (!purgeable)
            {
                return (total, false);
            }
            total += ids.Count;
            if (ids.Count < limit)
            {
                return (total, true);
            }
            if (pause > TimeSpan.Zero)
            {
                await Task.Delay(pause, ct);
            }
        }
    }

    private sealed record Cursor(DateTime? CursorAt, long? CursorId);

    private sealed record FinishedJob(long Id, DateTime FinishedAt);

    [LoggerMessage(EventId = 6001, Level = LogLevel.Information, Message = "Retention purged {Jobs} finished jobs ({Items} items, {Documents} documents) and {Snapshots} old snapshots")]
    private static partial void Purged(ILogger logger, int jobs, long items, long documents, long snapshots);
}

/// <summary>Deletes idempotency records past their <c>expires_at</c>, a few thousand per statement.</summary>
public sealed partial class IdempotencyCleanup(MySqlDataSource db, TimeProvider clock, ILogger<IdempotencyCleanup> logger)
{
    private const int Batch = 2000;

    public async Task<long> RunAsync(CancellationToken ct)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        long total = 0;
        while (true)
        {
            await using var conn = await db.OpenConnectionAsync(ct);
            var n = await conn.ExecuteAsync(new CommandDefinition(MaintenanceSql.DeleteExpiredIdempotency, new { Now = now, Limit = Batch }, cancellationToken: ct));
            total += n;
            if (n < Batch)
            {
                break;
            }
        }
        if (total > 0)
        {
            Cleaned(logger, total);
        }
        return total;
    }

    [LoggerMessage(EventId = 6002, Level = LogLevel.Information, Message = "Idempotency cleanup deleted {Count} expired records")]
    private static partial void Cleaned(ILogger logger, long count);
}

/// <summary>
/// The minute snapshot behind the Admin dashboard's charts: per tenant, items by state (from the jobs counters and
/// live leases) and the claims and completions of the minute (the change in <c>tenant_counters</c>, which the Api
/// processes flush, since the previous snapshot). Idempotent per minute.
/// </summary>
public sealed class SnapshotService(MySqlDataSource db, TimeProvider clock)
{
    /// <summary>Records the snapshot for the minute containing <paramref name="at"/> (default now); false if it existed.</summary>
    public Task<bool> TakeAsync(DateTimeOffset? at = null, CancellationToken ct = default) =>
        Retry.OnDeadlockAsync(async c =>
        {
            var now = clock.GetUtcNow().UtcDateTime;
            var instant = (at ?? clock.GetUtcNow()).UtcDateTime;
            var minute = new DateTime(instant.Ticks - (instant.Ticks % TimeSpan.TicksPerMinute), DateTimeKind.Utc);
            await using var conn = await db.OpenConnectionAsync(c);
            // Consistent reads, outside the transaction: they lock nothing that claims or completions need.
            var totals = (await conn.QueryAsync<TenantTotals>(new CommandDefinition(MaintenanceSql.TenantTotals, cancellationToken: c))).AsList();
            var leases = (await conn.QueryAsync<(long TenantId, long Leased)>(new CommandDefinition(MaintenanceSql.TenantLiveLeases, new { Now = now }, cancellationToken: c)))
                .ToDictionary(x => x.TenantId, x => x.Leased);

            await using var tx = await conn.BeginReadCommittedAsync(c);
            var seen = (await conn.QueryAsync<(long TenantId, long Claims, long Completions)>(new CommandDefinition(MaintenanceSql.SnapshotStateForUpdate, transaction: tx, cancellationToken: c)))
                .ToDictionary(x => x.TenantId);
            if (await conn.ExecuteScalarAsync<long>(new CommandDefinition(MaintenanceSql.SnapshotExists, new { At = minute }, tx, cancellationToken: c)) > 0)
            {
                await tx.RollbackAsync(c);
                return false;
            }
            foreach (var t in totals)
            {
                var leased = Math.Min(leases.GetValueOrDefault(t.TenantId), Math.Max(0, t.Active));
                seen.TryGetValue(t.TenantId, out var before);
                await conn.ExecuteAsync(new CommandDefinition(MaintenanceSql.InsertSnapshot, new
                {
                    At = minute,
                    t.TenantId,
                    Ready = Math.Max(0, t.Active - leased),
                    Leased = leased,
                    t.Done,
                    t.Dead,
                    t.Cancelled,
                    // A counter that went backwards (restored database) starts the count again rather than going negative.
                    Claims = t.Claims >= before.Claims ? t.Claims - before.Claims : t.Claims,
                    Completions = t.Completions >= before.Completions ? t.Completions - before.Completions : t.Completions,
                }, tx, cancellationToken: c));
                await conn.ExecuteAsync(new CommandDefinition(MaintenanceSql.SaveSnapshotState,
                    new { t.TenantId, t.Claims, t.Completions, At = minute }, tx, cancellationToken: c));
            }
            await tx.CommitAsync(c);
            return true;
        }, ct);

    private sealed record TenantTotals(long TenantId, long Active, long Done, long Dead, long Cancelled, long Claims, long Completions);
}

/// <summary>
/// Settles the leases a cancelled job still had out once they expire: docs/CONTRACT.md lets them complete while they live,
/// but a cancelled job has no lanes, so no claim would ever reclaim them and they would count as ready forever.
/// </summary>
public sealed class CancelledLeaseSweep(MySqlDataSource db, TimeProvider clock)
{
    private const int JobsPerRun = 500;

    public async Task<long> RunAsync(CancellationToken ct)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        await using var conn = await db.OpenConnectionAsync(ct);
        var jobs = (await conn.QueryAsync<long>(new CommandDefinition(MaintenanceSql.CancelledJobsWithExpiredLeases, new { Now = now, Limit = JobsPerRun }, cancellationToken: ct))).AsList();
        long total = 0;
        foreach (var job in jobs)
        {
            total += await Retry.OnDeadlockAsync(async c =>
            {
                await using var tx = await conn.BeginReadCommittedAsync(c);
                var n = await conn.ExecuteAsync(new CommandDefinition(MaintenanceSql.CancelExpiredLeasesOfJob, new { JobId = job, Now = now }, tx, cancellationToken: c));
                await conn.ExecuteAsync(new CommandDefinition(MaintenanceSql.CountCancelled, new { JobId = job, Count = n, Now = now }, tx, cancellationToken: c));
                await tx.CommitAsync(c);
                return n;
            }, ct);
        }
        return total;
    }
}
