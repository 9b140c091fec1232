using System.Buffers;
using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Sql;

namespace Queue.Core.Jobs;

/// <summary>Customer reads: job pages, document pages and downloads, item pages. Every read checks the tenant.</summary>
/// <remarks>
/// The pages (jobs, documents, items) read through <see cref="ReadSource"/>: the replica when there is one, so a page may
/// lag the primary by up to Cluster:MaxReplicaLagSeconds. A single document's metadata and its bytes read the primary.
/// </remarks>
public sealed class JobQueries(MySqlDataSource db, ReadSource reads, JobStatusService status)
{
    /// <summary>Bytes per slice of a download: the most a download holds in memory at once.</summary>
    public const int SliceBytes = 1024 * 1024;

    public async Task<Page<JobStatus>> JobsAsync(long tenantId, int? state, int limit, string? after, CancellationToken ct)
    {
        var (afterCreated, afterId) = (DateTime.MaxValue, long.MaxValue);
        if (after is not null)
        {
            var c = Cursor.Decode(after, 2) ?? throw Invalid("after", "is not a cursor from a previous page");
            // A tampered cursor can carry ticks no DateTime holds: the client's error, not ours.
            if (c[0] > DateTime.MaxValue.Ticks)
            {
                throw Invalid("after", "is not a cursor from a previous page");
            }
            (afterCreated, afterId) = (new DateTime(c[0], DateTimeKind.Utc), c[1]);
        }
        await using var conn = await reads.OpenAsync(ct);
        var rows = (await conn.QueryAsync<JobRow>(new CommandDefinition(state is null ? JobSql.JobsPage : JobSql.JobsPageInState,
            new { TenantId = tenantId, State = state, AfterCreated = afterCreated, AfterId = afterId, Limit = limit + 1 }, cancellationToken: ct))).AsList();
        var next = rows.Count > limit ? Cursor.Encode(rows[limit - 1].CreatedAt.Ticks, rows[limit - 1].Id) : null;
        var page = new List<JobStatus>(Math.Min(rows.Count, limit));
        foreach (var row in rows.Take(limit))
        {
            page.Add(await status.BuildAsync(conn, row, ct));
        }
        return new Page<JobStatus>(page, next);
    }

    /// <summary>Null when the job is not the tenant's.</summary>
    public async Task<Page<DocumentInfo>?> DocumentsAsync(long tenantId, long jobId, int limit, string? after, CancellationToken ct)
    {
        var afterId = after is null ? 0 : (Cursor.Decode(after, 1) ?? throw Invalid("after", "is not a cursor from a previous page"))[0];
        await using var conn = await reads.OpenAsync(ct);
        if (!await OwnsAsync(conn, tenantId, jobId, ct))
        {
            return null;
        }
        var rows = (await conn.QueryAsync<DocumentRow>(new CommandDefinition(JobSql.DocumentsPage,
            new { JobId = jobId, After = afterId, Limit = limit + 1 }, cancellationToken: ct))).AsList();
        var next = rows.Count > limit ? Cursor.Encode(rows[limit - 1].Id) : null;
        return new Page<DocumentInfo>(rows.Take(limit).Select(r => r.ToInfo()).ToList(), next);
    }

    public async Task<DocumentInfo?> DocumentAsync(long tenantId, long jobId, long documentId, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        var row = await conn.QuerySingleOrDefaultAsync<DocumentRow>(new CommandDefinition(JobSql.DocumentOfJob,
            new { DocumentId = documentId, JobId = jobId, TenantId = tenantId }, cancellationToken: ct));
        return row?.ToInfo();
    }

    /// <summary>
    /// Writes a document's bytes to <paramref name="destination"/> in slices, so that neither the driver nor this process
    /// holds more than <see cref="SliceBytes"/> of it at a time. Also for workers' GET /items/{id}/document.
    /// </summary>
    /// <param name="fromReplica">
    /// Read the bytes through <see cref="ReadSource"/> (customers' downloads): a committed document never changes, so a
    /// replica that has it serves exactly the primary's bytes, and one that has not replicated it yet is passed over for
    /// the primary before anything is written.
    /// </param>
    public async Task CopyContentAsync(long documentId, long size, Stream destination, CancellationToken ct, bool fromReplica = false)
    {
        var buffer = ArrayPool<byte>.Shared.Rent(SliceBytes);
        try
        {
            if (fromReplica && reads.HasReplica)
            {
                await using var replicaConnection = await reads.OpenAsync(ct);
                if (await CopyAsync(replicaConnection, documentId, size, destination, buffer, ct))
                {
                    return;
                }
            }
            await using var conn = await db.OpenConnectionAsync(ct);
            if (!await CopyAsync(conn, documentId, size, destination, buffer, ct))
            {
                throw new InvalidOperationException($"document {documentId} has no content row");
            }
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(buffer);
        }
    }

    /// <summary>False, having written nothing, when the connection's server has no content row for the document.</summary>
    private static async Task<bool> CopyAsync(MySqlConnection conn, long documentId, long size, Stream destination, byte[] buffer, CancellationToken ct)
    {
        for (long offset = 0; offset < size; offset += SliceBytes)
        {
            await using var cmd = new MySqlCommand(JobSql.ContentSlice, conn);
            cmd.Parameters.AddWithValue("@DocumentId", documentId);
            cmd.Parameters.AddWithValue("@Offset", offset + 1);
            cmd.Parameters.AddWithValue("@Length", SliceBytes);
            await using var reader = await cmd.ExecuteReaderAsync(System.Data.CommandBehavior.SequentialAccess, ct);
            if (!await reader.ReadAsync(ct))
            {
                if (offset == 0)
                {
                    return false;
                }
                throw new InvalidOperationException($"document {documentId} lost its content row while it was read");
            }
            var n = (int)reader.GetBytes(0, 0, buffer, 0, SliceBytes);
            await destination.WriteAsync(buffer.AsMemory(0, n), ct);
            if (n < SliceBytes)
            {
                break;
            }
        }
        return true;
    }

    public async Task<Page<ItemInfo>?> ItemsAsync(long tenantId, long jobId, int? state, int limit, string? after, CancellationToken ct)
    {
        var afterId = after is null ? 0 : (Cursor.Decode(after, 1) ?? throw Invalid("after", "is not a cursor from a previous page"))[0];
        await using var conn = await reads.OpenAsync(ct);
        if (!await OwnsAsync(conn, tenantId, jobId, ct))
        {
            return null;
        }
        var rows = (await conn.QueryAsync<ItemRow>(new CommandDefinition(state is null ? JobSql.ItemsPage : JobSql.ItemsPageInState,
            new { JobId = jobId, State = state, After = afterId, Limit = limit + 1 }, cancellationToken: ct))).AsList();
        var next = rows.Count > limit ? Cursor.Encode(rows[limit - 1].Id) : null;
        return new Page<ItemInfo>(rows.Take(limit).Select(r =>
            new ItemInfo(r.Id, r.DocumentId, r.Task, ItemStates.Name(r.State), r.Attempts, r.LastError, r.UpdatedAt)).ToList(), next);
    }

    private static async Task<bool> OwnsAsync(MySqlConnection conn, long tenantId, long jobId, CancellationToken ct) =>
        await conn.QuerySingleOrDefaultAsync<JobRow>(new CommandDefinition(JobSql.JobOfTenant, new { JobId = jobId, TenantId = tenantId }, cancellationToken: ct)) is not null;

    private static ValidationException Invalid(string field, string message) =>
        new(new Dictionary<string, string[]> { [field] = [message] });

    private sealed class DocumentRow
    {
        public long Id { get; set; }

        public string Name { get; set; } = "";

        public string ContentType { get; set; } = "";

        public long Size { get; set; }

        public byte[] Sha256 { get; set; } = [];

        public DateTime CreatedAt { get; set; }

        public DocumentInfo ToInfo() => new(Id, Name, ContentType, Size, Convert.ToHexStringLower(Sha256), CreatedAt);
    }

    private sealed class ItemRow
    {
        public long Id { get; set; }

        public long DocumentId { get; set; }

        public string Task { get; set; } = "";

        public int State { get; set; }

        public int Attempts { get; set; }

        public string? LastError { get; set; }

        public DateTime UpdatedAt { get; set; }
    }
}
