namespace Queue.Bench.Sql;

/// <summary>
/// The fairness simulator's (Queue.Bench) shortcut for submitting work: a closed job with N items on one document,
/// written directly so that a 100k-item flood takes seconds. Placement in the ordering still goes through OrderingLanes.
/// </summary>
public static class SimulationSql
{
    public const string InsertJob = """
        INSERT INTO jobs (tenant_id, name, state, tasks, documents, items_total, created_at, closed_at, updated_at)
        VALUES (@TenantId, @Name, 1, 'default', 1, @Items, @Now, @Now, @Now);
        SELECT LAST_INSERT_ID();
        """;

    public const string InsertDocument = """
        INSERT INTO documents (job_id, tenant_id, name, content_type, size, sha256, created_at)
        VALUES (@JobId, @TenantId, 'sim', 'application/octet-stream', 0, @Sha, @Now);
        SELECT LAST_INSERT_ID();
        """;

    /// <summary>N ready items, from MariaDB's built-in sequence engine (at most a million per job).</summary>
    public const string InsertItems = """
        INSERT INTO items (job_id, document_id, task, state, due_at, created_at, updated_at)
        SELECT @JobId, @DocumentId, 'default', 0, @Now, @Now, @Now FROM seq_1_to_1000000 LIMIT @Items
        """;

    /// <summary>Simulator-only FIFO policy: lanes by job id alone (the oldest job first), whatever its value.</summary>
    public const string FifoLanes = """
        SELECT job_id AS JobId, task AS Task, tenant_id AS TenantId, value AS Value
        FROM ordering
        WHERE blocked = 0 AND available_at <= @Now
        ORDER BY job_id, task
        LIMIT @Limit
        """;
}
