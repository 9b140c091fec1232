namespace Queue.Bench.Sql;

/// <summary>
/// Set-based seeding for the status benchmark (Queue.Bench "status"): 1,000 closed jobs x 2,000 documents x 5 tasks =
/// 10M queued items, written straight into the tables in a few statements instead of through the Api. MariaDB only
/// (the <c>seq_1_to_N</c> tables of its SEQUENCE engine); never used by the services.
/// </summary>
public static class BenchSeedSql
{
    public const int Jobs = 1000;
    public const int DocumentsPerJob = 2000;
    public const int TasksPerDocument = 5;

    public const string Jobs1000 = """
        INSERT INTO jobs (tenant_id, name, state, tasks, documents, items_total, created_at, closed_at, updated_at)
        SELECT @TenantId, CONCAT('seed-', s.seq), 1, 'a,b,c,d,e', 2000, 10000, @Now, @Now, @Now FROM seq_1_to_1000 s
        """;

    /// <summary>2,000 documents for each job in [@FromJob, @ToJob]. No content rows: status reads never touch bytes.</summary>
    public const string Documents = """
        INSERT INTO documents (job_id, tenant_id, name, content_type, size, sha256, created_at)
        SELECT j.id, j.tenant_id, CONCAT('doc-', s.seq), 'application/octet-stream', 1024, UNHEX(SHA2('seed', 256)), @Now
        FROM jobs j JOIN seq_1_to_2000 s
        WHERE j.tenant_id = @TenantId AND j.id BETWEEN @FromJob AND @ToJob
        """;

    /// <summary>Five items per document of the jobs in [@FromJob, @ToJob]; one in 100 documents has its first item on a live lease.</summary>
    public const string Items = """
        INSERT INTO items (job_id, document_id, task, state, attempts, due_at, created_at, updated_at)
        SELECT d.job_id, d.id, t.task, IF(t.task = 'a' AND d.id MOD 100 = 0, 1, 0), IF(t.task = 'a' AND d.id MOD 100 = 0, 1, 0),
               IF(t.task = 'a' AND d.id MOD 100 = 0, @LeaseUntil, @Now), @Now, @Now
        FROM documents d
        JOIN (SELECT 'a' AS task UNION ALL SELECT 'b' UNION ALL SELECT 'c' UNION ALL SELECT 'd' UNION ALL SELECT 'e') t
        WHERE d.job_id BETWEEN @FromJob AND @ToJob
        """;

    /// <summary>Every job's five lanes, oldest-first values (10000 + 5 * rank).</summary>
    public const string Lanes = """
        INSERT INTO ordering (job_id, task, tenant_id, value, mode, blocked, available_at, updated_at)
        SELECT j.id, t.task, j.tenant_id, 10000 + 5 * (j.id - @FirstJob), 'oldest', 0, @Now, @Now
        FROM jobs j
        JOIN (SELECT 'a' AS task UNION ALL SELECT 'b' UNION ALL SELECT 'c' UNION ALL SELECT 'd' UNION ALL SELECT 'e') t
        WHERE j.tenant_id = @TenantId
        """;

    public const string JobRange = "SELECT MIN(id) AS First, MAX(id) AS Last FROM jobs WHERE tenant_id = @TenantId";

    public const string CountItems = "SELECT COUNT(*) FROM items";
}
