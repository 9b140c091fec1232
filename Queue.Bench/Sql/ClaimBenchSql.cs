namespace Queue.Bench.Sql;

/// <summary>
/// Set-based seeding for the claim benchmark (Queue.Bench ClaimBench): millions of items in seconds through MariaDB's
/// sequence engine, shaped exactly like uploaded work (closed jobs, one document per job, items, one lane per job).
/// </summary>
public static class ClaimBenchSql
{
    public const string SeedJobs = """
        INSERT INTO jobs (tenant_id, name, state, tasks, documents, items_total, created_at, closed_at, updated_at)
        SELECT @TenantId, CONCAT(@Task, '-', seq), 1, @Task, 1, @PerJob, @Now, @Now, @Now FROM seq_1_to_1000000 WHERE seq <= @Jobs
        """;

    public const string JobRange = "SELECT MIN(id) AS First, MAX(id) AS Last FROM jobs WHERE tasks = @Task";

    public const string SeedDocuments = """
        INSERT INTO documents (job_id, tenant_id, name, content_type, size, sha256, created_at)
        SELECT id, tenant_id, 'bench.bin', 'application/octet-stream', 0, UNHEX(SHA2('', 256)), @Now
        FROM jobs WHERE id BETWEEN @First AND @Last
        """;

    /// <summary>The items of a range of jobs, in id order per job as an upload would create them.</summary>
    public const string SeedItems = """
        INSERT INTO items (job_id, document_id, task, state, due_at, created_at, updated_at)
        SELECT d.job_id, d.id, @Task, 0, @Now, @Now, @Now
        FROM documents d JOIN seq_1_to_1000000 s ON s.seq <= @PerJob
        WHERE d.job_id BETWEEN @First AND @Last
        ORDER BY d.job_id, s.seq
        """;

    public const string SeedLanes = """
        INSERT INTO ordering (job_id, task, tenant_id, value, mode, blocked, available_at, updated_at)
        SELECT id, @Task, tenant_id, items_total, 'smallest', 0, @Now, @Now FROM jobs WHERE id BETWEEN @First AND @Last
        """;

    /// <summary>
    /// What a bulk load leaves the server to do after its commit: undo records not yet purged (history list length) and
    /// modified buffer-pool pages not yet written. A measurement taken while either is large measures the aftershock of
    /// the load, not the claim.
    /// </summary>
    public const string Backlog = """
        SELECT CAST(SUM(IF(VARIABLE_NAME = 'INNODB_HISTORY_LIST_LENGTH', VARIABLE_VALUE, 0)) AS SIGNED) AS History,
               CAST(SUM(IF(VARIABLE_NAME = 'INNODB_BUFFER_POOL_PAGES_DIRTY', VARIABLE_VALUE, 0)) AS SIGNED) AS DirtyPages
        FROM information_schema.GLOBAL_STATUS
        WHERE VARIABLE_NAME IN ('INNODB_HISTORY_LIST_LENGTH', 'INNODB_BUFFER_POOL_PAGES_DIRTY')
        """;

    // ---- What the ordering looked like when a claim came back empty (Queue.Bench rewrite): bench-only reads, each a
    //      walk of a few rows or a count the bench pays for only on an empty answer.

    /// <summary>Lanes a claim could have walked at @Now (a scan of ix_ordering_any).</summary>
    public const string ClaimableLanes = "SELECT COUNT(*) FROM ordering WHERE blocked = 0 AND available_at <= @Now";

    /// <summary>The swap's state: its work tables and what its triggers write (notes or mirrors).</summary>
    public const string SwapState = """
        SELECT CONCAT(
          (SELECT GROUP_CONCAT(TABLE_NAME ORDER BY TABLE_NAME) FROM information_schema.TABLES
           WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'ordering%'),
          '; triggers: ',
          COALESCE((SELECT GROUP_CONCAT(DISTINCT IF(ACTION_STATEMENT LIKE '%ordering_next%', 'mirror', 'note'))
                    FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = 'ordering'), 'none'))
        """;

    /// <summary>
    /// The ordering's lanes counted in its primary key and in each index a claim walks: a bulk-loaded table whose
    /// secondary indexes missed rows would show here as counts that disagree.
    /// </summary>
    public const string LanesByIndex = """
        SELECT CONCAT('primary ', (SELECT COUNT(*) FROM ordering FORCE INDEX (PRIMARY)),
          ', any ', (SELECT COUNT(*) FROM ordering FORCE INDEX (ix_ordering_any)),
          ', tenant ', (SELECT COUNT(*) FROM ordering FORCE INDEX (ix_ordering_tenant)),
          ', task ', (SELECT COUNT(*) FROM ordering FORCE INDEX (ix_ordering_task)),
          ', task_tenant ', (SELECT COUNT(*) FROM ordering FORCE INDEX (ix_ordering_task_tenant)),
          ', mode ', (SELECT COUNT(*) FROM ordering FORCE INDEX (ix_ordering_mode)),
          ', with a hint due ', (SELECT COUNT(*) FROM ordering FORCE INDEX (PRIMARY) WHERE available_at <= UTC_TIMESTAMP(6)),
          ', blocked ', (SELECT COUNT(*) FROM ordering FORCE INDEX (PRIMARY) WHERE blocked <> 0))
        """;

    /// <summary>The head of the claim order as a walk sees it (ix_ordering_any, LIMIT 3).</summary>
    public const string HeadLanes = """
        SELECT CONCAT(job_id, ' value ', value, ' ', mode, ' hint ', DATE_FORMAT(available_at, '%H:%i:%s.%f'))
        FROM ordering FORCE INDEX (ix_ordering_any) WHERE blocked = 0
        ORDER BY value, job_id LIMIT 3
        """;
}
