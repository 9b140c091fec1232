using System.Buffers;
using System.Security.Cryptography;
using Dapper;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Ordering;
using Queue.Core.Sql;

namespace Queue.Core.Jobs;

public sealed class JobService(MySqlDataSource db, TimeProvider clock, OrderingLanes lanes, TenantCache tenants, IOptions<JobOptions> options, WorkSignal work,
    SubmissionBatcher submissions, UploadBatcher uploads) : IDisposable
{
    /// <summary>Documents up to this size are read into a pooled buffer and stored in one round trip with their items.</summary>
    public const int ProbeBytes = 256 * 1024;

    private readonly SemaphoreSlim streams = new(options.Value.MaxConcurrentStreams);

    public void Dispose() => streams.Dispose();

    public async Task<(PendingJob Job, CreatedJob Created)> CreateAsync(long tenantId, NewJob job, CancellationToken ct)
    {
        var tasks = job.Tasks ?? (await tenants.GetAsync(tenantId, ct))?.DefaultTaskList
            ?? throw new InvalidOperationException($"tenant {tenantId} does not exist");
        var pending = new PendingJob(tenantId, job.Name, tasks, job.Open, job.Documents);
        var result = await submissions.CreateAsync(pending, ct);
        if (job.Documents.Count > 0)
        {
            work.Notify(); // wake this process's long-polling workers at once (docs/DESIGN.md "Claims", long-poll)
        }
        return (pending, result);
    }

    /// <summary>
    /// Adds streamed documents to an open job. Every document, its bytes and its items are written in one transaction,
    /// committed only after the last byte: a client that goes away halfway leaves nothing behind. An upload whose
    /// documents all fit in <see cref="JobOptions.GroupedUploadBytes"/> is read whole first, outside any transaction,
    /// and written with the other small uploads of the moment in one grouped transaction (<see cref="UploadBatcher"/>).
    /// </summary>
    public async Task<(Outcome Outcome, UploadResult? Result)> UploadAsync(
        long tenantId, long jobId, IAsyncEnumerable<IncomingDocument> documents, long maxDocumentBytes, CancellationToken ct)
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
        var tasks = job.Tasks.Split(',', StringSplitOptions.RemoveEmptyEntries);
        var buffered = new List<BufferedDocument>();
        long bufferedBytes = 0;
        await using var e = documents.GetAsyncEnumerator(ct);
        while (await e.MoveNextAsync())
        {
            var doc = e.Current;
            Validate(doc);
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
                return await UploadInTransactionAsync(tenantId, jobId, tasks, buffered, (doc, metered, probe, filled), e, maxDocumentBytes, ct);
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
        var result = await uploads.UploadAsync(new SmallUpload(tenantId, jobId, tasks, buffered), ct);
        if (result.Outcome == Outcome.Ok)
        {
            work.Notify(); // wake this process's long-polling workers at once (docs/DESIGN.md "Claims", long-poll)
        }
        return result;
    }

    private static void Validate(IncomingDocument doc)
    {
        var errors = JobValidation.Document(doc.Name, doc.ContentType, "name");
        if (errors.Count > 0)
        {
            throw new ValidationException(errors);
        }
    }

    /// <summary>
    /// An upload too large to group: the documents read so far, the one being read (its first bytes in
    /// <paramref name="current"/>'s probe) and every later one, streamed into one transaction.
    /// </summary>
    private async Task<(Outcome Outcome, UploadResult? Result)> UploadInTransactionAsync(long tenantId, long jobId, string[] tasks,
        List<BufferedDocument> buffered, (IncomingDocument Doc, MeteredStream Metered, byte[] Probe, int Filled) current,
        IAsyncEnumerator<IncomingDocument> rest, long maxDocumentBytes, CancellationToken ct)
    {
        var tasksJson = JobValidation.TasksJson(tasks);
        await using var conn = await db.OpenConnectionAsync(ct);
        await using var tx = await conn.BeginReadCommittedAsync(ct);
        var created = new List<CreatedDocument>();
        var now = clock.GetUtcNow().UtcDateTime;
        foreach (var b in buffered)
        {
            created.Add(await InsertSmallAsync(conn, tx, tenantId, jobId, tasksJson, b.Name, b.ContentType, b.Content, b.Sha256, now, ct));
        }
        created.Add(await StoreRestAsync(conn, tx, tenantId, jobId, tasksJson, current.Doc, current.Metered, current.Probe, current.Filled, now, ct));
        while (await rest.MoveNextAsync())
        {
            Validate(rest.Current);
            created.Add(await StoreAsync(conn, tx, tenantId, jobId, tasksJson, rest.Current, maxDocumentBytes, ct));
        }
        now = clock.GetUtcNow().UtcDateTime;
        var items = (long)created.Count * tasks.Length;
        var changed = await conn.ExecuteAsync(new CommandDefinition(JobSql.AddToJob,
            new { JobId = jobId, Documents = created.Count, Items = items, Close = false, Now = now }, tx, cancellationToken: ct));
        if (changed == 0)
        {
            // Closed or cancelled while the bytes were streaming: nothing of this upload lands.
            await tx.RollbackAsync(ct);
            return (Outcome.Conflict, null);
        }
        await lanes.PlaceAsync(conn, tx, jobId, tasks, ct);
        // Every byte is in: a client leaving now must not make the commit's outcome unknowable to its Idempotency-Key.
        await tx.CommitAsync(CancellationToken.None);
        work.Notify(); // wake this process's long-polling workers at once (docs/DESIGN.md "Claims", long-poll)
        return (Outcome.Ok, new UploadResult(created, items));
    }

    private async Task<CreatedDocument> StoreAsync(
        MySqlConnection conn, MySqlTransaction tx, long tenantId, long jobId, string tasksJson, IncomingDocument doc, long maxBytes, CancellationToken ct)
    {
        await using var metered = new MeteredStream(doc.Body, maxBytes, $"document '{doc.Name}'");
        var probe = ArrayPool<byte>.Shared.Rent(ProbeBytes);
        try
        {
            return await StoreRestAsync(conn, tx, tenantId, jobId, tasksJson, doc, metered, probe, 0, clock.GetUtcNow().UtcDateTime, ct);
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(probe);
        }
    }

    /// <summary>
    /// A document whose first <paramref name="filled"/> bytes are in <paramref name="probe"/> (a rented buffer of
    /// <see cref="ProbeBytes"/>): topped up to a full probe, then in one round trip when that is all of it, else streamed.
    /// </summary>
    private async Task<CreatedDocument> StoreRestAsync(MySqlConnection conn, MySqlTransaction tx, long tenantId, long jobId, string tasksJson,
        IncomingDocument doc, MeteredStream metered, byte[] probe, int filled, DateTime now, CancellationToken ct)
    {
        filled += await metered.ReadAtLeastAsync(probe.AsMemory(filled, ProbeBytes - filled), ProbeBytes - filled, throwOnEndOfStream: false, ct);
        if (filled < ProbeBytes)
        {
            return await InsertSmallAsync(conn, tx, tenantId, jobId, tasksJson, doc.Name, doc.ContentType, probe.AsMemory(0, filled), metered.Hash(), now, ct);
        }
        await streams.WaitAsync(ct);
        try
        {
            return await StoreStreamedAsync(conn, tx, tenantId, jobId, tasksJson, doc, metered, probe.AsMemory(0, filled), now, ct);
        }
        finally
        {
            streams.Release();
        }
    }

    /// <summary>The whole document is in hand: row, bytes and items in one round trip.</summary>
    private static async Task<CreatedDocument> InsertSmallAsync(MySqlConnection conn, MySqlTransaction tx, long tenantId, long jobId, string tasksJson,
        string name, string contentType, ReadOnlyMemory<byte> content, byte[] sha, DateTime now, CancellationToken ct)
    {
        await using var cmd = new MySqlCommand(JobSql.InsertSmallDocument, conn, tx);
        cmd.Parameters.AddWithValue("@JobId", jobId);
        cmd.Parameters.AddWithValue("@TenantId", tenantId);
        cmd.Parameters.AddWithValue("@Name", name);
        cmd.Parameters.AddWithValue("@ContentType", contentType);
        cmd.Parameters.AddWithValue("@Size", (long)content.Length);
        cmd.Parameters.AddWithValue("@Sha256", sha);
        cmd.Parameters.AddWithValue("@Content", content);
        cmd.Parameters.AddWithValue("@Tasks", tasksJson);
        cmd.Parameters.AddWithValue("@Now", now);
        var id = Convert.ToInt64(await cmd.ExecuteScalarAsync(ct), System.Globalization.CultureInfo.InvariantCulture);
        return new CreatedDocument(id, name, content.Length, Convert.ToHexStringLower(sha));
    }

    private static async Task<CreatedDocument> StoreStreamedAsync(
        MySqlConnection conn, MySqlTransaction tx, long tenantId, long jobId, string tasksJson, IncomingDocument doc, MeteredStream metered,
        ReadOnlyMemory<byte> probe, DateTime now, CancellationToken ct)
    {
        var id = await conn.ExecuteScalarAsync<long>(new CommandDefinition(JobSql.InsertDocumentHeader,
            new { JobId = jobId, TenantId = tenantId, doc.Name, doc.ContentType, Sha256 = new byte[32], Now = now }, tx, cancellationToken: ct));
        await using (var content = new MySqlCommand(JobSql.InsertStreamedContent, conn, tx))
        {
            content.Parameters.AddWithValue("@DocumentId", id);
            // A Stream (not a MemoryStream) on a prepared statement goes out in COM_STMT_SEND_LONG_DATA packets as it
            // is read, so the document never sits whole in managed memory (MySqlConnector 2.6).
            content.Parameters.AddWithValue("@Content", new PrefixedStream(probe, metered));
            await content.PrepareAsync(ct);
            await content.ExecuteNonQueryAsync(ct);
        }
        var sha = metered.Hash();
        await conn.ExecuteAsync(new CommandDefinition(JobSql.FinishStreamedDocument,
            new { DocumentId = id, Size = metered.BytesRead, Sha256 = sha, JobId = jobId, Tasks = tasksJson, Now = now }, tx, cancellationToken: ct));
        return new CreatedDocument(id, doc.Name, metered.BytesRead, Convert.ToHexStringLower(sha));
    }

    public async Task<Outcome> CloseAsync(long tenantId, long jobId, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        var changed = await Retry.OnDeadlockAsync(ct => conn.ExecuteAsync(new CommandDefinition(JobSql.CloseJob,
            new { JobId = jobId, TenantId = tenantId, Now = clock.GetUtcNow().UtcDateTime }, cancellationToken: ct)), ct);
        if (changed > 0)
        {
            return Outcome.Ok;
        }
        var job = await conn.QuerySingleOrDefaultAsync<UploadJob>(new CommandDefinition(JobSql.JobForUpload,
            new { JobId = jobId, TenantId = tenantId }, cancellationToken: ct));
        return job is null ? Outcome.NotFound : job.State == JobStates.Cancelled ? Outcome.Conflict : Outcome.Ok;
    }

    /// <summary>Cancels a job: ready items become cancelled, its lanes go, live leases may still complete.</summary>
    public async Task<Outcome> CancelAsync(long tenantId, long jobId, CancellationToken ct)
    {
        return await Retry.OnDeadlockAsync(async ct =>
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
            await tx.CommitAsync(ct);
            return Outcome.Ok;
        }, ct);
    }

    private sealed record UploadJob(long Id, sbyte State, string Tasks);

}
