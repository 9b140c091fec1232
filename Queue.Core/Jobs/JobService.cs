using System.Buffers;
using System.Security.Cryptography;
using Dapper;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Ordering;
using Queue.Core.Sql;
using Queue.Core.Telemetry;

namespace Queue.Core.Jobs;

public sealed class JobService(MySqlDataSource db, TimeProvider clock, TenantCache tenants, IOptions<JobOptions> options, WorkSignal work,
    SubmissionBatcher submissions, UploadBatcher uploads, LargeUploads large, OpenJobCache openJobs)
{
    /// <summary>Documents up to this size are read into a pooled buffer and stored in one round trip with their items.</summary>
    public const int ProbeBytes = 256 * 1024;

    /// <param name="key">The Idempotency-Key record the request runs under, marked with the job in its transaction.</param>
    public async Task<(PendingJob Job, CreatedJob Created)> CreateAsync(long tenantId, NewJob job, IdempotencyRun? key, CancellationToken ct)
    {
        var began = QueueTracing.Begin();
        var tasks = job.Tasks ?? (await tenants.GetAsync(tenantId, ct))?.DefaultTaskList
            ?? throw new InvalidOperationException($"tenant {tenantId} does not exist");
        var pending = new PendingJob(tenantId, job.Name, tasks, job.Open, job.Documents) { Key = key };
        CreatedJob result;
        try
        {
            result = await submissions.CreateAsync(pending, ct);
        }
        catch (WriteStillRunningException running)
        {
            // The answer to come needs the job as it was asked for, as the answer now would have.
            throw new WriteStillRunningException(running.Message, LandedAsync(pending, running.LandingOf<CreatedJob>()));
        }
        QueueTracing.Submitted(began, result.JobId, tenantId, job.Documents.Count, pending.ItemCount);
        if (result.Held)
        {
            work.NotifyHeld(); // its items are in the claim-ahead buffer already: nothing new waits in the database
        }
        else if (job.Documents.Count > 0)
        {
            work.Notify(); // wake this process's long-polling workers at once (docs/DESIGN.md "Claims", long-poll)
        }
        return (pending, result);
    }

    private static async Task<(PendingJob Job, CreatedJob Created)> LandedAsync(PendingJob pending, Task<CreatedJob> landing) => (pending, await landing);

    /// <summary>
    /// Adds streamed documents to an open job. Every document, its bytes and its items are written in one transaction,
    /// committed only after the last byte: a client that goes away halfway leaves nothing behind. An upload whose
    /// documents all fit in <see cref="JobOptions.GroupedUploadBytes"/> is read whole first, outside any transaction,
    /// and written with the other small uploads of the moment in one grouped transaction (<see cref="UploadBatcher"/>).
    /// </summary>
    public async Task<(Outcome Outcome, UploadResult? Result)> UploadAsync(
        long tenantId, long jobId, IAsyncEnumerable<IncomingDocument> documents, long maxDocumentBytes, IdempotencyRun? key, CancellationToken ct)
    {
        if (!openJobs.TryGet(jobId, out var owner, out var tasks))
        {
            UploadJob? job;
            await using (var lookup = await db.OpenConnectionAsync(ct))
            {
                job = await lookup.QuerySingleOrDefaultAsync<UploadJob>(new CommandDefinition(JobSql.JobForUpload,
                    new { JobId = jobId, TenantId = tenantId }, cancellationToken: ct));
            }
            if (job is null)
            {
                return (Outcome.NotFound, null);
            }
            if (job.State != JobStates.Open)
            {
                return (Outcome.Conflict, null);
            }
            tasks = job.Tasks.Split(',', StringSplitOptions.RemoveEmptyEntries);
            openJobs.Remember(jobId, tenantId, tasks);
        }
        else if (owner != tenantId)
        {
            return (Outcome.NotFound, null);
        }
        var buffered = new List<BufferedDocument>();
        long bufferedBytes = 0;
        await using var e = documents.GetAsyncEnumerator(ct);
        while (await e.MoveNextAsync())
        {
            var doc = e.Current;
            JobValidation.ThrowIfInvalid(doc);
            await using var metered = new MeteredStream(doc.Body, maxDocumentBytes, $"document '{doc.Name}'");
            var room = (int)Math.Min(ProbeBytes, options.Value.GroupedUploadBytes - bufferedBytes);
            var probe = ArrayPool<byte>.Shared.Rent(ProbeBytes);
            try
            {
                var filled = room <= 0 ? 0 : await metered.ReadAtLeastAsync(probe.AsMemory(0, room), room, throwOnEndOfStream: false, ct);
                if (room > 0 && filled < room)
                {
                    // The whole document is in hand and the upload still fits: keep it for the grouped transaction.
                    buffered.Add(new BufferedDocument(doc.Name, doc.ContentType, probe.AsSpan(0, filled).ToArray(), metered.Hash()));
                    bufferedBytes += filled;
                    continue;
                }
                return await large.UploadAsync(new LargeUpload(tenantId, jobId, tasks, buffered, doc, metered, probe.AsMemory(0, filled), e, maxDocumentBytes) { Key = key }, ct);
            }
            finally
            {
                ArrayPool<byte>.Shared.Return(probe);
            }
        }
        if (buffered.Count == 0)
        {
            throw new ValidationException(new Dictionary<string, string[]> { ["documents"] = ["the request holds no document"] });
        }
        var result = await uploads.UploadAsync(new SmallUpload(tenantId, jobId, tasks, buffered) { Key = key }, ct);
        if (result.Outcome == Outcome.Ok)
        {
            work.Notify(); // wake this process's long-polling workers at once (docs/DESIGN.md "Claims", long-poll)
        }
        return result;
    }

    public async Task<Outcome> CloseAsync(long tenantId, long jobId, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        var changed = await Retry.OnDeadlockAsync(ct => conn.ExecuteAsync(new CommandDefinition(JobSql.CloseJob,
            new { JobId = jobId, TenantId = tenantId, Now = clock.GetUtcNow().UtcDateTime }, cancellationToken: ct)), ct);
        if (changed > 0)
        {
            openJobs.Forget(jobId);
            return Outcome.Ok;
        }
        var job = await conn.QuerySingleOrDefaultAsync<UploadJob>(new CommandDefinition(JobSql.JobForUpload,
            new { JobId = jobId, TenantId = tenantId }, cancellationToken: ct));
        return job is null ? Outcome.NotFound : job.State == JobStates.Cancelled ? Outcome.Conflict : Outcome.Ok;
    }

    /// <summary>Cancels a job: ready items become cancelled, its lanes go, live leases may still complete.</summary>
    public async Task<Outcome> CancelAsync(long tenantId, long jobId, CancellationToken ct)
    {
        var bumped = false;
        var outcome = await Retry.OnDeadlockAsync(async ct =>
        {
            var now = clock.GetUtcNow().UtcDateTime;
            await using var conn = await db.OpenConnectionAsync(ct);
            await using var tx = await conn.BeginReadCommittedAsync(ct);
            var changed = await conn.ExecuteAsync(new CommandDefinition(JobSql.CancelJob, new { JobId = jobId, TenantId = tenantId, Now = now }, tx, cancellationToken: ct));
            if (changed == 0)
            {
                await tx.RollbackAsync(ct);
                var job = await conn.QuerySingleOrDefaultAsync<UploadJob>(new CommandDefinition(JobSql.JobForUpload,
                    new { JobId = jobId, TenantId = tenantId }, cancellationToken: ct));
                return job is null ? Outcome.NotFound : Outcome.Ok; // already done or cancelled: nothing changes
            }
            await JobCancellation.CancelReadyItemsAsync(conn, tx, jobId, now, ct);
            await OrderingLanes.RemoveJobAsync(conn, tx, jobId, ct);
            // Claimed-ahead items of this job must not be handed out once this commits (docs/DESIGN.md, claim epoch).
            await conn.ExecuteAsync(new CommandDefinition(ClaimSql.BumpEpoch, transaction: tx, cancellationToken: ct));
            await tx.CommitAsync(ct);
            bumped = true;
            openJobs.Forget(jobId);
            return Outcome.Ok;
        }, ct);
        if (bumped)
        {
            // The answer says no item of the job is handed out any more: not before every process reads past the bump.
            await EpochLease.SettleAsync(ct);
        }
        return outcome;
    }

    private sealed record UploadJob(long Id, sbyte State, string Tasks);

}
