using System.Data;
using System.Security.Cryptography;
using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Jobs;
using Queue.Core.Sql;
using Queue.Core.Telemetry;

namespace Queue.Core.Claims;

/// <summary>
/// Everything done to a lease after the claim: complete, fail, extend, the leased document, and giving back items that
/// were taken but never handed out. Each call is one short READ COMMITTED transaction; a lease is checked by its token
/// in constant time, and an item is completed at most once, ever.
/// </summary>
/// <param name="floors">The claims' lane floors (<see cref="ClaimEngine"/>): a retry or a give-back drops its lane's floor.</param>
/// <param name="handouts">Leases handed out from memory and not written yet: a finish or an extend makes their write moot.</param>
public sealed class LeaseService(MySqlDataSource db, TimeProvider clock, LaneJanitor janitor, LaneFloors? floors = null, HandoutLog? handouts = null)
    : IAsyncDisposable
{
    private readonly HeldConnection completions = new(db);

    public ValueTask DisposeAsync() => completions.DisposeAsync();

    /// <summary>
    /// Gives back items that were taken but never handed out (reservations, or leases of callers who left). An item
    /// whose job was cancelled meanwhile is cancelled instead of made ready: the job has no lanes any more, so a ready
    /// item would never be claimed and the job's counters would never settle.
    /// </summary>
    public async Task ReleaseAsync(IReadOnlyList<TakenItem> items, CancellationToken ct)
    {
        if (items.Count == 0)
        {
            return;
        }
        handouts?.Finished(items.Select(i => i.Id));
        var now = clock.GetUtcNow().UtcDateTime;
        var lanes = items.Select(i => (i.JobId, i.Task)).Distinct().ToList();
        await Retry.OnDeadlockAsync(async c =>
        {
            await using var conn = await db.OpenConnectionAsync(c);
            await using var tx = await conn.BeginReadCommittedAsync(c);
            await using var batch = new MySqlBatch(conn, tx);
            foreach (var item in items)
            {
                var cmd = new MySqlBatchCommand(item.Reservation ? ClaimSql.ReleaseReservation : ClaimSql.ReleaseLease);
                cmd.Parameters.AddWithValue("@Id", item.Id);
                cmd.Parameters.AddWithValue("@Token", item.Token);
                cmd.Parameters.AddWithValue("@Now", now);
                batch.BatchCommands.Add(cmd);
            }
            foreach (var lane in lanes)
            {
                var cmd = new MySqlBatchCommand(ClaimSql.LowerLaneHint);
                cmd.Parameters.AddWithValue("@JobId", lane.JobId);
                cmd.Parameters.AddWithValue("@Task", lane.Task);
                cmd.Parameters.AddWithValue("@At", now);
                batch.BatchCommands.Add(cmd);
            }
            await batch.ExecuteNonQueryAsync(c);
            // A cancel that commits after this read finds these items ready and cancels them itself.
            var cancelled = await conn.QueryAsync<long>(new CommandDefinition(ClaimSql.CancelledJobsAmong,
                new { JobIds = items.Select(i => i.JobId).Distinct().ToList() }, tx, cancellationToken: c));
            foreach (var jobId in cancelled)
            {
                await JobCancellation.CancelReadyItemsAsync(conn, tx, jobId, now, c);
            }
            await tx.CommitAsync(c);
            return true;
        }, ct);
        foreach (var (jobId, task) in lanes)
        {
            floors?.Drop(jobId, task);
        }
    }

    /// <summary>
    /// Completes many leases in one transaction; each gets its own outcome. At most one completion per item, ever. Two
    /// round trips: the begin rides the items' lock and the COMMIT the writes (<see cref="ClaimTransaction"/>), as a
    /// claim's do; with one worker the completion is the chain a drain waits on (docs/DESIGN.md "Handouts from memory").
    /// </summary>
    public Task<(FinishOutcome[] Outcomes, Dictionary<long, int> CompletionsByTenant)> CompleteAsync(IReadOnlyList<LeaseRef> leases, CancellationToken ct) =>
        Retry.OnDeadlockAsync(async c =>
        {
            // Completion transactions run one at a time and thousands a second: the connection stays open between them
            // (docs/DESIGN.md "Claim and completion round trips"). One kept from the last completion may have died
            // since (a restarted server); a failure before the COMMIT went out changed nothing, so it is made again on
            // a fresh connection.
            ClaimTransaction? tx = null;
            // Only completions use this connection, so one kept from an earlier completion has its level set already.
            return await completions.RunAsync(use => CompleteOnAsync(tx = new ClaimTransaction(use.Connection, isolationSet: use.Reused), use, leases, c),
                () => tx?.CommitSent != true, c);
        }, ct);

    private async Task<(FinishOutcome[] Outcomes, Dictionary<long, int> CompletionsByTenant)> CompleteOnAsync(ClaimTransaction tx, HeldConnection.Use use,
        IReadOnlyList<LeaseRef> leases, CancellationToken c)
    {
        var began = QueueTracing.Begin();
        var now = clock.GetUtcNow().UtcDateTime;
        var ids = leases.Select(l => l.ItemId).Distinct().ToList();
        try
        {
            var rows = await LockForFinishAsync(tx, ids, c);
            var outcomes = new FinishOutcome[leases.Count];
            var done = new Dictionary<long, byte[]>();
            var perJob = new Dictionary<long, int>();
            for (var i = 0; i < leases.Count; i++)
            {
                var l = leases[i];
                if (!rows.TryGetValue(l.ItemId, out var row))
                {
                    outcomes[i] = FinishOutcome.NotFound;
                }
                else if (row.CompletedBy(l.Token) || (done.TryGetValue(row.Id, out var by) && CryptographicOperations.FixedTimeEquals(by, l.Token)))
                {
                    // The same completion again (its answer was lost): confirmed, nothing written a second time.
                    outcomes[i] = FinishOutcome.Done;
                }
                else if (!row.IsLiveLease(l.Token, now) || !done.TryAdd(row.Id, l.Token))
                {
                    outcomes[i] = FinishOutcome.Stale;
                }
                else
                {
                    outcomes[i] = FinishOutcome.Done;
                    perJob[row.JobId] = perJob.GetValueOrDefault(row.JobId) + 1;
                }
            }
            // Each job's tenant, read back with the counters anyway, kept only for the spans.
            var tenants = began is null ? null : new Dictionary<long, long>();
            var (byTenant, dry) = done.Count > 0 ? await WriteCompletionsAsync(tx, done.Keys, perJob, now, tenants, c) : ([], []);
            await tx.CommitAsync(c);
            use.Keep();
            handouts?.Finished(done.Keys);
            janitor.RanDry(dry);
            if (began is { } at && tenants is not null)
            {
                foreach (var id in done.Keys)
                {
                    var row = rows[id];
                    QueueTracing.Completed(at, id, row.JobId, tenants.GetValueOrDefault(row.JobId), row.Task, row.Attempt, row.Worker, done.Count);
                }
            }
            return (outcomes, byTenant);
        }
        catch
        {
            await tx.RollbackAsync();
            throw;
        }
    }

    /// <summary>The items' rows, locked, by the statement that begins the transaction.</summary>
    private static async Task<Dictionary<long, FinishRow>> LockForFinishAsync(ClaimTransaction tx, List<long> ids, CancellationToken ct)
    {
        await using var cmd = new MySqlCommand(ClaimSql.LockItemsForFinish(ids.Count), tx.Connection);
        cmd.Parameters.AddNumbered("@i", ids);
        tx.BeginWith(cmd);
        await using var reader = await cmd.ExecuteReaderAsync(ct);
        var parse = reader.GetRowParser<FinishRow>();
        var rows = new Dictionary<long, FinishRow>(ids.Count);
        while (await reader.ReadAsync(ct))
        {
            var row = parse(reader);
            rows[row.Id] = row;
        }
        return rows;
    }

    /// <summary>
    /// One round trip and three statements for the items, every job's counters and the jobs after, then the COMMIT: a
    /// batch of completions costs the same however many items and jobs it spans. Lanes of jobs that ran dry go after the
    /// commit (<see cref="LaneJanitor"/>), so a completion never waits on a lane a rewrite holds.
    /// </summary>
    private static async Task<(Dictionary<long, int> ByTenant, List<long> Dry)> WriteCompletionsAsync(ClaimTransaction tx,
        IEnumerable<long> done, Dictionary<long, int> perJob, DateTime now, Dictionary<long, long>? tenants, CancellationToken ct)
    {
        var byTenant = new Dictionary<long, int>();
        var dry = new List<long>();
        await using var batch = new MySqlBatch(tx.Connection);
        foreach (var ids in done.Chunk(SqlRows.CaseRowsPerStatement))
        {
            var items = new MySqlBatchCommand(ClaimSql.CompleteItems(ids.Length));
            items.Parameters.AddNumbered("@i", ids);
            items.Parameters.AddWithValue("@Now", now);
            batch.BatchCommands.Add(items);
        }
        foreach (var jobs in perJob.Chunk(SqlRows.CaseRowsPerStatement))
        {
            var counts = new MySqlBatchCommand(ClaimSql.CountCompleted(jobs.Length));
            var after = new MySqlBatchCommand(ClaimSql.JobsAfterCount(jobs.Length));
            counts.Parameters.AddNumbered("@j", jobs.Select(j => j.Key));
            counts.Parameters.AddNumbered("@n", jobs.Select(j => j.Value));
            counts.Parameters.AddWithValue("@Now", now);
            after.Parameters.AddNumbered("@j", jobs.Select(j => j.Key));
            batch.BatchCommands.Add(counts);
            batch.BatchCommands.Add(after);
        }
        tx.CommitWith(batch);
        await using var reader = await batch.ExecuteReaderAsync(ct);
        var parse = reader.GetRowParser<JobTenant>();
        do
        {
            while (await reader.ReadAsync(ct))
            {
                var job = parse(reader);
                byTenant[job.TenantId] = byTenant.GetValueOrDefault(job.TenantId) + perJob[job.Id];
                tenants?.TryAdd(job.Id, job.TenantId);
                if (job.Active <= 0)
                {
                    dry.Add(job.Id);
                }
            }
        }
        while (await reader.NextResultAsync(ct));
        return (byTenant, dry);
    }

    /// <summary>
    /// A failed attempt: retried after min(2^(attempt-1) s, 5 min) ±20%, or dead once the tenant's max_attempts is
    /// used up or the worker said retry: false. Every failure is kept in item_errors.
    /// </summary>
    public Task<(FinishOutcome Outcome, bool Dead, long TenantId)> FailAsync(LeaseRef lease, string error, bool retry, CancellationToken ct) =>
        Retry.OnDeadlockAsync(async c =>
        {
            var began = QueueTracing.Begin();
            var now = clock.GetUtcNow().UtcDateTime;
            await using var conn = await db.OpenConnectionAsync(c);
            await using var tx = await conn.BeginReadCommittedAsync(c);
            var row = await conn.QuerySingleOrDefaultAsync<FinishRow>(new CommandDefinition(ClaimSql.LockItemForFinish, new { Id = lease.ItemId }, tx, cancellationToken: c));
            if (row is null)
            {
                return (FinishOutcome.NotFound, false, 0L);
            }
            if (!row.IsLiveLease(lease.Token, now))
            {
                return (FinishOutcome.Stale, false, 0L);
            }
            var job = await conn.QuerySingleAsync<JobStateRow>(new CommandDefinition(ClaimSql.JobStateAndTenant, new { row.JobId }, tx, cancellationToken: c));
            var max = await conn.ExecuteScalarAsync<int>(new CommandDefinition(ClaimSql.MaxAttemptsOfJob, new { row.JobId }, tx, cancellationToken: c));
            await conn.ExecuteAsync(new CommandDefinition(ClaimSql.RecordError, new { row.Id, row.Attempt, Error = error, Now = now }, tx, cancellationToken: c));
            var dead = false;
            if (job.State == JobStates.Cancelled)
            {
                // The job was cancelled while this lease was out: nothing of it is handed out again.
                await conn.ExecuteAsync(new CommandDefinition(ClaimSql.CancelItem, new { row.Id, Error = error, Now = now }, tx, cancellationToken: c));
                await JobCounters.CountFinishedAsync(conn, tx, row.JobId, new(Cancelled: 1), now, c);
            }
            else if (!retry || row.Attempt >= max)
            {
                dead = true;
                await conn.ExecuteAsync(new CommandDefinition(ClaimSql.KillItem, new { row.Id, Error = error, Now = now }, tx, cancellationToken: c));
                await JobCounters.CountFinishedAsync(conn, tx, row.JobId, new(Dead: 1), now, c);
            }
            else
            {
                var due = now + Backoff(row.Attempt);
                await conn.ExecuteAsync(new CommandDefinition(ClaimSql.RetryItem, new { row.Id, Error = error, Due = due, Now = now }, tx, cancellationToken: c));
                await conn.ExecuteAsync(new CommandDefinition(ClaimSql.LowerLaneHint, new { row.JobId, row.Task, At = due }, tx, cancellationToken: c));
            }
            await tx.CommitAsync(c);
            handouts?.Finished([row.Id]);
            QueueTracing.Failed(began, row.Id, row.JobId, job.TenantId, row.Task, row.Attempt, dead, error);
            if (!dead)
            {
                floors?.Drop(row.JobId, row.Task);
            }
            return (FinishOutcome.Done, dead, job.TenantId);
        }, ct);

    /// <summary>min(2^(attempt-1) s, 5 min), then ±20% uniform jitter so a burst of failures does not come back in lockstep.</summary>
    public static TimeSpan Backoff(int attempt)
    {
        var seconds = Math.Min(Math.Pow(2, Math.Max(0, attempt - 1)), 300);
        return TimeSpan.FromSeconds(seconds * (0.8 + (0.4 * Random.Shared.NextDouble())));
    }

    public async Task<(FinishOutcome Outcome, DateTime Expires)> ExtendAsync(LeaseRef lease, int seconds, string? worker, CancellationToken ct)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        var expires = now.AddSeconds(seconds);
        await using var conn = await db.OpenConnectionAsync(ct);
        var changed = await conn.ExecuteAsync(new CommandDefinition(ClaimSql.ExtendLease,
            new { Id = lease.ItemId, lease.Token, Expires = expires, Worker = worker, Now = now }, cancellationToken: ct));
        if (changed > 0)
        {
            handouts?.Finished([lease.ItemId]);
            return (FinishOutcome.Done, expires);
        }
        return (await ExistsAsync(conn, lease.ItemId, ct) ? FinishOutcome.Stale : FinishOutcome.NotFound, default);
    }

    /// <summary>The document behind a live lease, or why there is none.</summary>
    public async Task<(FinishOutcome Outcome, LeaseDocument? Document)> DocumentAsync(LeaseRef lease, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        var doc = await conn.QuerySingleOrDefaultAsync<LeaseDocument>(new CommandDefinition(ClaimSql.DocumentOfLease,
            new { Id = lease.ItemId, lease.Token, Now = clock.GetUtcNow().UtcDateTime }, cancellationToken: ct));
        if (doc is not null)
        {
            return (FinishOutcome.Done, doc);
        }
        return (await ExistsAsync(conn, lease.ItemId, ct) ? FinishOutcome.Stale : FinishOutcome.NotFound, null);
    }

    /// <summary>Streams a document's bytes without holding them whole in memory.</summary>
    public async Task CopyDocumentAsync(long documentId, Stream destination, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        await using var cmd = new MySqlCommand(ClaimSql.DocumentContent, conn);
        cmd.Parameters.AddWithValue("@DocumentId", documentId);
        await using var reader = await cmd.ExecuteReaderAsync(CommandBehavior.SequentialAccess, ct);
        if (await reader.ReadAsync(ct))
        {
            await using var content = reader.GetStream(0);
            await content.CopyToAsync(destination, ct);
        }
    }

    private static async Task<bool> ExistsAsync(MySqlConnection conn, long id, CancellationToken ct) =>
        await conn.ExecuteScalarAsync<long>(new CommandDefinition(ClaimSql.ItemExists, new { Id = id }, cancellationToken: ct)) > 0;

    private sealed record JobTenant(long Id, long TenantId, long Active);

    private sealed record JobStateRow(sbyte State, long TenantId);
}
