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
