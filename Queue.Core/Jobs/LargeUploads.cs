using System.Buffers;
using Dapper;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Ordering;
using Queue.Core.Sql;

namespace Queue.Core.Jobs;

/// <summary>
/// An upload too large to group: the documents already read (<see cref="Buffered"/>), the one whose first bytes are in
/// hand (<see cref="First"/>, <see cref="Head"/>), and every later one (<see cref="Rest"/>).
/// </summary>
public sealed record LargeUpload(long TenantId, long JobId, IReadOnlyList<string> Tasks, IReadOnlyList<BufferedDocument> Buffered,
    IncomingDocument First, MeteredStream FirstMetered, ReadOnlyMemory<byte> Head, IAsyncEnumerator<IncomingDocument> Rest, long MaxDocumentBytes)
{
    /// <summary>The Idempotency-Key record this upload runs under, if any: its documents are marked on it in its transaction.</summary>
    public IdempotencyRun? Key { get; init; }
}

/// <summary>
/// Uploads too large to group. Every document is first spooled to a temporary file at the client's pace, with no
/// connection and no transaction open, so a client trickling at Kestrel's minimum rate holds nothing another tenant
/// needs (a pooled connection, an open transaction, a slot of <see cref="JobOptions.MaxConcurrentStreams"/>); then the
/// whole upload goes into one transaction at disk speed, and lands whole or not at all. A client that goes away
/// halfway leaves a deleted temporary file and nothing in the database. See docs/DESIGN.md "Grouped uploads".
/// </summary>
public sealed class LargeUploads(MySqlDataSource db, TimeProvider clock, OrderingLanes lanes, IOptions<JobOptions> options, WorkSignal work,
    SpoolBudget budget) : IDisposable
{
    private readonly SemaphoreSlim streams = new(options.Value.MaxConcurrentStreams);

    public void Dispose() => streams.Dispose();

    public async Task<(Outcome Outcome, UploadResult? Result)> UploadAsync(LargeUpload upload, CancellationToken ct)
    {
        var spooled = new List<SpooledDocument>();
        try
        {
            spooled.Add(await SpoolAsync(upload.First, upload.FirstMetered, upload.Head, ct));
            while (await upload.Rest.MoveNextAsync())
            {
                var doc = upload.Rest.Current;
                JobValidation.ThrowIfInvalid(doc);
                await using var metered = new MeteredStream(doc.Body, upload.MaxDocumentBytes, $"document '{doc.Name}'");
                spooled.Add(await SpoolAsync(doc, metered, ReadOnlyMemory<byte>.Empty, ct));
            }
            return await WriteAsync(upload, spooled, ct);
        }
        finally
        {
            foreach (var s in spooled)
            {
                await s.File.DisposeAsync();
                budget.Give(s.Size);
            }
        }
    }

    /// <summary>The document's bytes (<paramref name="head"/>, already read through <paramref name="metered"/>, then the rest) in a file deleted on close.</summary>
    private async Task<SpooledDocument> SpoolAsync(IncomingDocument doc, MeteredStream metered, ReadOnlyMemory<byte> head, CancellationToken ct)
    {
        var dir = options.Value.SpoolDirectory is { Length: > 0 } d ? d : Path.Combine(Path.GetTempPath(), "queue-uploads");
        Directory.CreateDirectory(dir);
        var file = new FileStream(Path.Combine(dir, Guid.NewGuid().ToString("N")), FileMode.CreateNew, FileAccess.ReadWrite, FileShare.None,
            64 * 1024, FileOptions.Asynchronous | FileOptions.DeleteOnClose);
        var taken = 0L;
        var buffer = ArrayPool<byte>.Shared.Rent(64 * 1024);
        try
        {
            await WriteAsync(head);
            int n;
            while ((n = await metered.ReadAsync(buffer, ct)) > 0)
            {
                await WriteAsync(buffer.AsMemory(0, n));
            }
            await file.FlushAsync(ct);
            file.Position = 0;
            return new SpooledDocument(doc.Name, doc.ContentType, file, metered.BytesRead, metered.Hash());
        }
        catch
        {
            await file.DisposeAsync();
            budget.Give(taken);
            throw;
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(buffer);
        }

        async Task WriteAsync(ReadOnlyMemory<byte> bytes)
        {
            if (!budget.TryTake(bytes.Length))
            {
                throw new ServiceBusyException("the upload spool of this process is full");
            }
            taken += bytes.Length;
            await file.WriteAsync(bytes, ct);
        }
    }

    private async Task<(Outcome Outcome, UploadResult? Result)> WriteAsync(LargeUpload upload, List<SpooledDocument> spooled, CancellationToken ct)
    {
        var tasksJson = JobValidation.TasksJson(upload.Tasks);
        await using var conn = await db.OpenConnectionAsync(ct);
        var session = conn.ServerThread;
        await using var tx = await conn.BeginReadCommittedAsync(ct);
        var now = clock.GetUtcNow().UtcDateTime;
        var created = new List<CreatedDocument>();
        var target = new DocumentTarget(upload.TenantId, upload.JobId, tasksJson, now);
        foreach (var b in upload.Buffered)
        {
            created.Add(await InsertWholeAsync(conn, tx, target, b.Name, b.ContentType, b.Content, b.Sha256, ct));
        }
        foreach (var s in spooled)
        {
            created.Add(await StoreAsync(conn, tx, target, s, ct));
        }
        var items = (long)created.Count * upload.Tasks.Count;
        var changed = await conn.ExecuteAsync(new CommandDefinition(JobSql.AddToJob,
            new { upload.JobId, Documents = created.Count, Items = items, Close = false, Now = clock.GetUtcNow().UtcDateTime }, tx, cancellationToken: ct));
        if (changed == 0)
        {
            // Closed or cancelled while the bytes were arriving: nothing of this upload lands.
            await tx.RollbackAsync(ct);
            return (Outcome.Conflict, null);
        }
        await lanes.PlaceAsync(conn, tx, upload.JobId, upload.Tasks, ct);
        if (upload.Key is { } key)
        {
            await using var mark = new MySqlBatch(conn, tx);
            mark.BatchCommands.Add(IdempotencyMarks.Upload(upload.TenantId, upload.JobId, key, created));
            await mark.ExecuteNonQueryAsync(ct);
        }
        // Every byte is in: a client leaving now must not make the commit's outcome unknowable to its Idempotency-Key,
        // and a COMMIT that gets no answer is checked (CommitCheck) rather than reported as not done.
        await CommitCheck.CommitAsync(tx, db, session, JobSql.DocumentLanded, new { created[0].Id, created[0].Name });
        work.Notify(); // wake this process's long-polling workers at once (docs/DESIGN.md "Claims", long-poll)
        return (Outcome.Ok, new UploadResult(created, items));
    }

    /// <summary>A spooled document: whole in one round trip when small, else streamed from its file (one of <see cref="JobOptions.MaxConcurrentStreams"/> at a time).</summary>
    private async Task<CreatedDocument> StoreAsync(MySqlConnection conn, MySqlTransaction tx, DocumentTarget target, SpooledDocument s, CancellationToken ct)
    {
        if (s.Size < JobService.ProbeBytes)
        {
            var bytes = new byte[s.Size];
            await s.File.ReadExactlyAsync(bytes, ct);
            return await InsertWholeAsync(conn, tx, target, s.Name, s.ContentType, bytes, s.Sha256, ct);
        }
        await streams.WaitAsync(ct);
        try
        {
            var id = await conn.ExecuteScalarAsync<long>(new CommandDefinition(JobSql.InsertDocumentHeader,
                new { target.JobId, target.TenantId, s.Name, s.ContentType, Sha256 = new byte[32], target.Now }, tx, cancellationToken: ct));
            await using (var content = new MySqlCommand(JobSql.InsertStreamedContent, conn, tx))
            {
                content.Parameters.AddWithValue("@DocumentId", id);
                // A Stream on a prepared statement goes out in COM_STMT_SEND_LONG_DATA packets as it is read, so the
                // document never sits whole in managed memory (MySqlConnector 2.6).
                content.Parameters.AddWithValue("@Content", s.File);
                await content.PrepareAsync(ct);
                await content.ExecuteNonQueryAsync(ct);
            }
            await conn.ExecuteAsync(new CommandDefinition(JobSql.FinishStreamedDocument,
                new { DocumentId = id, s.Size, s.Sha256, target.JobId, Tasks = target.TasksJson, target.Now }, tx, cancellationToken: ct));
            return new CreatedDocument(id, s.Name, s.Size, Convert.ToHexStringLower(s.Sha256));
        }
        finally
        {
            streams.Release();
        }
    }

    /// <summary>The whole document is in hand: row, bytes and items in one round trip.</summary>
    private static async Task<CreatedDocument> InsertWholeAsync(MySqlConnection conn, MySqlTransaction tx, DocumentTarget target,
        string name, string contentType, ReadOnlyMemory<byte> content, byte[] sha, CancellationToken ct)
    {
        await using var cmd = new MySqlCommand(JobSql.InsertSmallDocument, conn, tx);
        cmd.Parameters.AddWithValue("@JobId", target.JobId);
        cmd.Parameters.AddWithValue("@TenantId", target.TenantId);
        cmd.Parameters.AddWithValue("@Name", name);
        cmd.Parameters.AddWithValue("@ContentType", contentType);
        cmd.Parameters.AddWithValue("@Size", (long)content.Length);
        cmd.Parameters.AddWithValue("@Sha256", sha);
        cmd.Parameters.AddWithValue("@Content", content);
        cmd.Parameters.AddWithValue("@Tasks", target.TasksJson);
        cmd.Parameters.AddWithValue("@Now", target.Now);
        var id = Convert.ToInt64(await cmd.ExecuteScalarAsync(ct), System.Globalization.CultureInfo.InvariantCulture);
        return new CreatedDocument(id, name, content.Length, Convert.ToHexStringLower(sha));
    }

    private sealed record DocumentTarget(long TenantId, long JobId, string TasksJson, DateTime Now);

    private sealed record SpooledDocument(string Name, string ContentType, FileStream File, long Size, byte[] Sha256);
}
