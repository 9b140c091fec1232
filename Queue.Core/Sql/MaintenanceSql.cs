namespace Queue.Core.Sql;

/// <summary>The Scheduler's housekeeping: retention, expired idempotency records, the per-minute snapshots.</summary>
public static class MaintenanceSql
{
    /// <summary>Cancelled jobs that still hold leases which have expired (their lanes are gone, so no claim settles them).</summary>
    public const string CancelledJobsWithExpiredLeases = $"""
        SELECT j.id FROM jobs j
        WHERE j.state = {JobStateSql.Cancelled} AND EXISTS (SELECT 1 FROM items i WHERE i.job_id = j.id AND i.state = {ItemStateSql.Leased} AND i.due_at <= @Now)
        LIMIT @Limit
        """;

    public const string CancelExpiredLeasesOfJob = $"""
        UPDATE items SET state = {ItemStateSql.Cancelled}, lease_token = NULL, lease_expires_at = NULL, last_error = 'job cancelled', due_at = @Now,
            updated_at = @Now
        WHERE job_id = @JobId AND state = {ItemStateSql.Leased} AND due_at <= @Now
        """;

    public const string CountCancelled = """
        UPDATE jobs SET items_cancelled = items_cancelled + @Count, updated_at = @Now WHERE id = @JobId
        """;

    public const string RetentionCursor = """
        SELECT cursor_at AS CursorAt, cursor_id AS CursorId FROM scheduler_state WHERE name = 'retention'
        """;

    public const string SaveRetentionCursor = """
        UPDATE scheduler_state SET cursor_at = @CursorAt, cursor_id = @CursorId, updated_at = @Now WHERE name = 'retention'
        """;

    /// <summary>
    /// Done or cancelled jobs that finished before the cutoff, after the cursor, oldest first. Uses
    /// ix_jobs_state_finished (state, finished_at).
    /// </summary>
    public const string FinishedJobs = $"""
        SELECT id AS Id, finished_at AS FinishedAt
        FROM jobs
        WHERE state IN ({JobStateSql.Done}, {JobStateSql.Cancelled}) AND finished_at >= @CursorAt AND finished_at < @Cutoff
          AND (finished_at > @CursorAt OR id > @CursorId)
        ORDER BY finished_at, id
        LIMIT @Limit
        """;

    /// <summary>A purge batch's check: the job is still finished before the cutoff, its row locked against a requeue (PRIMARY).</summary>
    public const string LockPurgeableJob = $"""
        SELECT id FROM jobs WHERE id = @JobId AND state IN ({JobStateSql.Done}, {JobStateSql.Cancelled}) AND finished_at < @Cutoff FOR UPDATE
        """;

    public const string ItemBatch = "SELECT id FROM items WHERE job_id = @JobId ORDER BY id LIMIT @Limit";

    public const string DeleteItemErrors = "DELETE FROM item_errors WHERE item_id IN @Ids";

    public const string DeleteItems = "DELETE FROM items WHERE id IN @Ids";

    public const string DocumentBatch = "SELECT id FROM documents WHERE job_id = @JobId ORDER BY id LIMIT @Limit";

    public const string DeleteDocumentContent = "DELETE FROM document_content WHERE document_id IN @Ids";

    public const string DeleteDocuments = "DELETE FROM documents WHERE id IN @Ids";

    public const string DeleteOldSnapshots = "DELETE FROM snapshots WHERE at < @Cutoff LIMIT @Limit";

    public const string DeleteExpiredIdempotency = """
        DELETE FROM idempotency WHERE expires_at <= @Now ORDER BY expires_at LIMIT @Limit
        """;

    public const string SnapshotExists = "SELECT COUNT(*) FROM snapshots WHERE at = @At";

    /// <summary>Per tenant: items by state from the jobs counters, and the cumulative claim and completion counts.</summary>
    public const string TenantTotals = """
        SELECT t.id AS TenantId,
               CAST(COALESCE(SUM(j.items_total - j.items_done - j.items_dead - j.items_cancelled), 0) AS SIGNED) AS Active,
               CAST(COALESCE(SUM(j.items_done), 0) AS SIGNED) AS Done,
               CAST(COALESCE(SUM(j.items_dead), 0) AS SIGNED) AS Dead,
               CAST(COALESCE(SUM(j.items_cancelled), 0) AS SIGNED) AS Cancelled,
               COALESCE(MAX(tc.claims), 0) AS Claims,
               COALESCE(MAX(tc.completions), 0) AS Completions
        FROM tenants t
        LEFT JOIN jobs j ON j.tenant_id = t.id
        LEFT JOIN tenant_counters tc ON tc.tenant_id = t.id
        GROUP BY t.id
        """;

    /// <summary>Live leases per tenant, counted on ix_items_job_state for the jobs that still have active items.</summary>
    public const string TenantLiveLeases = $"""
        SELECT j.tenant_id AS TenantId, COUNT(*) AS Leased
        FROM jobs j
        JOIN items i ON i.job_id = j.id AND i.state = {ItemStateSql.Leased} AND i.due_at > @Now
        WHERE j.items_total - j.items_done - j.items_dead - j.items_cancelled > 0
        GROUP BY j.tenant_id
        """;

    public const string SnapshotStateForUpdate = """
        SELECT tenant_id AS TenantId, claims AS Claims, completions AS Completions FROM snapshot_state FOR UPDATE
        """;

    public const string InsertSnapshot = """
        INSERT IGNORE INTO snapshots (at, tenant_id, ready, leased, done, dead, cancelled, claims, completions)
        VALUES (@At, @TenantId, @Ready, @Leased, @Done, @Dead, @Cancelled, @Claims, @Completions)
        """;

    public const string SaveSnapshotState = """
        INSERT INTO snapshot_state (tenant_id, claims, completions, at) VALUES (@TenantId, @Claims, @Completions, @At)
        ON DUPLICATE KEY UPDATE claims = VALUES(claims), completions = VALUES(completions), at = VALUES(at)
        """;
}
