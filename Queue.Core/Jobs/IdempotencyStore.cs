using Dapper;
using MySqlConnector;
using Queue.Core.Sql;

namespace Queue.Core.Jobs;

/// <summary>A stored 2xx answer, replayed byte for byte.</summary>
public sealed record StoredResponse(int StatusCode, string? Location, byte[] Body);

public enum IdempotencyVerdict
{
    /// <summary>The key is new (or expired): this request runs and owns it.</summary>
    Run,

    /// <summary>Another request with the key is still running: 409.</summary>
    InFlight,

    /// <summary>The key's request finished: compare fingerprints, then replay or 422.</summary>
    Completed,

    /// <summary>
    /// The key's request made its job (<see cref="IdempotencyClaim.JobId"/>) but has not stored an answer: it is still
    /// answering, or it died after the commit. Answered with that job, never made again.
    /// </summary>
    Landed,
}

public sealed record IdempotencyClaim(IdempotencyVerdict Verdict, DateTime Started, byte[]? RequestHash, string? Method, string? Path, StoredResponse? Response)
{
    /// <summary>The job the key's running request made or uploaded to (<see cref="IdempotencyVerdict.Landed"/>).</summary>
    public long? JobId { get; init; }

    /// <summary>For an upload: its first document and how many it stored (null for a POST /jobs).</summary>
    public (long First, int Count)? Documents { get; init; }
}

/// <summary>The record a keyed write runs under: its job is marked on it in the job's own transaction (<see cref="IdempotencySql.MarkJob"/>).</summary>
public sealed record IdempotencyRun(string Key, DateTime Started);

/// <summary>
/// Idempotency-Key records (IETF draft-ietf-httpapi-idempotency-key-header), per tenant. Only 2xx answers are kept; an
/// error frees the key. Records live <see cref="Retention"/>; the Scheduler deletes expired ones
/// (<see cref="IdempotencySql.DeleteExpired"/>). A record left "running" by a process that died is taken over after
/// <see cref="StaleAfter"/>.
/// </summary>
public sealed class IdempotencyStore(MySqlDataSource db, TimeProvider clock)
{
    public static readonly TimeSpan Retention = TimeSpan.FromHours(24);
    public static readonly TimeSpan StaleAfter = TimeSpan.FromMinutes(10);

    public async Task<IdempotencyClaim> BeginAsync(long tenantId, string key, string method, string path, CancellationToken ct)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        var args = new
        {
            TenantId = tenantId,
            Key = key,
            Method = method,
            Path = Truncate(path, 400),
            RequestHash = new byte[32],
            Now = now,
            ExpiresAt = now + Retention,
            StaleBefore = now - StaleAfter,
        };
        await using var conn = await db.OpenConnectionAsync(ct);
        for (var attempt = 0; attempt < 3; attempt++)
        {
            try
            {
                await conn.ExecuteAsync(new CommandDefinition(IdempotencySql.Begin, args, cancellationToken: ct));
                return new IdempotencyClaim(IdempotencyVerdict.Run, now, null, null, null, null);
            }
            catch (MySqlException ex) when (ex.ErrorCode == MySqlErrorCode.DuplicateKeyEntry)
            {
            }
            if (await conn.ExecuteAsync(new CommandDefinition(IdempotencySql.TakeOver, args, cancellationToken: ct)) > 0)
            {
                return new IdempotencyClaim(IdempotencyVerdict.Run, now, null, null, null, null);
            }
            var row = await conn.QuerySingleOrDefaultAsync<Row>(new CommandDefinition(IdempotencySql.Find, new { TenantId = tenantId, Key = key }, cancellationToken: ct));
            if (row is null)
            {
                continue; // released between our insert and our read: try again
            }
            if (row.State == 0 && row.JobId is { } job && row.Method == method && row.Path == args.Path)
            {
                return new IdempotencyClaim(IdempotencyVerdict.Landed, row.CreatedAt, null, row.Method, row.Path, null)
                {
                    JobId = job,
                    Documents = row.DocumentId is { } first ? (first, row.Documents ?? 1) : null,
                };
            }
            return row.State == 0
                ? new IdempotencyClaim(IdempotencyVerdict.InFlight, row.CreatedAt, null, null, null, null)
                : new IdempotencyClaim(IdempotencyVerdict.Completed, row.CreatedAt, row.RequestHash, row.Method, row.Path,
                    new StoredResponse(row.StatusCode ?? 200, row.Location, row.Response ?? []));
        }
        return new IdempotencyClaim(IdempotencyVerdict.InFlight, now, null, null, null, null);
    }

    public async Task CompleteAsync(long tenantId, string key, DateTime started, byte[] requestHash, StoredResponse response, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        await conn.ExecuteAsync(new CommandDefinition(IdempotencySql.Complete, new
        {
            TenantId = tenantId,
            Key = key,
            Started = started,
            RequestHash = requestHash,
            response.StatusCode,
            response.Location,
            Response = response.Body,
            ExpiresAt = clock.GetUtcNow().UtcDateTime + Retention,
        }, cancellationToken: ct));
    }

    public async Task ReleaseAsync(long tenantId, string key, DateTime started, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        await conn.ExecuteAsync(new CommandDefinition(IdempotencySql.Release, new { TenantId = tenantId, Key = key, Started = started }, cancellationToken: ct));
    }

    private static string Truncate(string s, int max) => s.Length <= max ? s : s[..max];

    private sealed class Row
    {
        public string Method { get; set; } = "";

        public string Path { get; set; } = "";

        public byte[] RequestHash { get; set; } = [];

        public int State { get; set; }

        public long? JobId { get; set; }

        public long? DocumentId { get; set; }

        public int? Documents { get; set; }

        public int? StatusCode { get; set; }

        public string? Location { get; set; }

        public byte[]? Response { get; set; }

        public DateTime CreatedAt { get; set; }

        public DateTime ExpiresAt { get; set; }
    }
}
