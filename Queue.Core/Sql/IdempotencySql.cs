namespace Queue.Core.Sql;

/// <summary>Idempotency-Key records (IETF draft): one per (tenant, key), kept at least 24 h.</summary>
public static class IdempotencySql
{
    /// <summary>Claims a key for a request now running; a duplicate key fails with 1062.</summary>
    public const string Begin = $"""
        INSERT INTO idempotency (tenant_id, idem_key, method, path, request_hash, state, created_at, expires_at)
        VALUES (@TenantId, @Key, @Method, @Path, @RequestHash, {KeyStateSql.Running}, @Now, @ExpiresAt)
        """;

    public const string Find = """
        SELECT method AS Method, path AS Path, request_hash AS RequestHash, state AS State, job_id AS JobId, document_id AS DocumentId,
               documents AS Documents, status_code AS StatusCode,
               location AS Location, response AS Response, created_at AS CreatedAt, expires_at AS ExpiresAt
        FROM idempotency WHERE tenant_id = @TenantId AND idem_key = @Key
        """;

    /// <summary>Re-uses a record that expired, or whose request died without an answer (its process crashed).</summary>
    public const string TakeOver = $"""
        UPDATE idempotency SET method = @Method, path = @Path, request_hash = @RequestHash, state = {KeyStateSql.Running}, job_id = NULL, document_id = NULL, documents = NULL, status_code = NULL,
               location = NULL, response = NULL, created_at = @Now, expires_at = @ExpiresAt
        WHERE tenant_id = @TenantId AND idem_key = @Key AND (expires_at <= @Now OR (state = {KeyStateSql.Running} AND created_at < @StaleBefore AND job_id IS NULL))
        """;

    /// <summary>
    /// In the job's own transaction: the job a keyed POST /jobs made, on the record its run owns (created_at). A record
    /// with a job is never taken over while running: its retries are answered with that job (PRIMARY).
    /// </summary>
    public const string MarkJob = $"""
        UPDATE idempotency SET job_id = @JobId WHERE tenant_id = @TenantId AND idem_key = @Key AND created_at = @Started AND state = {KeyStateSql.Running}
        """;

    /// <summary>The same for a keyed upload, in its own transaction: its job, its first document and how many it stored (PRIMARY).</summary>
    public const string MarkUpload = $"""
        UPDATE idempotency SET job_id = @JobId, document_id = @DocumentId, documents = @Documents
        WHERE tenant_id = @TenantId AND idem_key = @Key AND created_at = @Started AND state = {KeyStateSql.Running}
        """;

    /// <summary>Stores a 2xx answer for replay. created_at identifies the run that owns the record.</summary>
    public const string Complete = $"""
        UPDATE idempotency SET state = {KeyStateSql.Completed}, request_hash = @RequestHash, status_code = @StatusCode, location = @Location,
               response = @Response, expires_at = @ExpiresAt
        WHERE tenant_id = @TenantId AND idem_key = @Key AND state = {KeyStateSql.Running} AND created_at = @Started
        """;

    /// <summary>An error is not stored: the key is freed so that a corrected retry may use it.</summary>
    /// <summary>
    /// Frees a key whose request failed, unless its write landed (<see cref="MarkJob"/>, <see cref="MarkUpload"/>): an
    /// error after the commit (a status or position read on a reset connection) then leaves the key to answer with what
    /// was made. `soak --faults` made a job twice that way: the key was freed and the retry ran afresh.
    /// </summary>
    public const string Release = $"""
        DELETE FROM idempotency WHERE tenant_id = @TenantId AND idem_key = @Key AND state = {KeyStateSql.Running} AND created_at = @Started AND job_id IS NULL
        """;

    /// <summary>For the Scheduler's cleanup job: expired records, a bounded batch at a time.</summary>
    public const string DeleteExpired = "DELETE FROM idempotency WHERE expires_at < @Now ORDER BY expires_at LIMIT @Batch";
}
