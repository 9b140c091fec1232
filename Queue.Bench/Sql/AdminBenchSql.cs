namespace Queue.Bench.Sql;

/// <summary>
/// Bulk seeding for the <c>admin</c> benchmark: 100k jobs with lanes, items, leases, dead items and overrides in a
/// few statements. MariaDB only (the SEQUENCE engine's <c>seq_1_to_N</c> tables), like the benchmark's private server.
/// </summary>
public static class AdminBenchSql
{
    public const string Tenants = """
        INSERT INTO tenants (name, default_tasks, created_at, updated_at)
        SELECT CONCAT('bench-', seq), 'text,thumbnail', @Now, @Now FROM seq_1_to_20
        """;

    /// <summary>Sizes vary from 2 to 2,000 items so smallest-first spreads the values; ages are a second apart.</summary>
    public const string Jobs = """
        INSERT INTO jobs (tenant_id, name, state, tasks, documents, items_total, created_at, closed_at, updated_at)
        SELECT t.min_id + seq % 20, CONCAT('bench-job-', seq), 1, 'text,thumbnail', 1 + (seq * 7919) % 1000, 2 * (1 + (seq * 7919) % 1000),
               @Now - INTERVAL (@Jobs + 1 - seq) SECOND, @Now, @Now
        FROM seq_1_to_100000 CROSS JOIN (SELECT MIN(id) AS min_id FROM tenants) t
        WHERE seq <= @Jobs
        """;

    /// <summary>Two items per job and task are enough for the per-job index probes the pages make.</summary>
    public const string Items = """
        INSERT INTO items (job_id, document_id, task, state, due_at, created_at, updated_at)
        SELECT j.id, 0, k.task, 0, @Now, @Now, @Now
        FROM jobs j CROSS JOIN (SELECT 'text' AS task UNION ALL SELECT 'thumbnail') k CROSS JOIN seq_1_to_2
        """;

    /// <summary>One job in a hundred has two leased items, spread over 50 workers; one in two hundred a dead one.</summary>
    public const string Leases = """
        UPDATE items SET state = 1, attempts = 1, due_at = @Now + INTERVAL 5 MINUTE, lease_expires_at = @Now + INTERVAL 5 MINUTE,
               worker = CONCAT('worker-', job_id % 50)
        WHERE job_id % 100 = 0 AND task = 'text'
        """;

    public const string Dead = """
        UPDATE items SET state = 3, attempts = 5, last_error = 'bench: failed five times'
        WHERE job_id % 200 = 1 AND task = 'thumbnail' AND state = 0
        """;

    public const string DeadCounters = """
        UPDATE jobs j JOIN (SELECT job_id, COUNT(*) AS n FROM items WHERE state = 3 GROUP BY job_id) d ON d.job_id = j.id
        SET j.items_dead = d.n
        """;

    /// <summary>Smallest-first values from the counters; one job in a thousand blocked.</summary>
    public const string Lanes = """
        INSERT INTO ordering (job_id, task, tenant_id, value, mode, blocked, available_at, updated_at)
        SELECT j.id, k.task, j.tenant_id, j.items_total - j.items_dead, 'smallest', IF(j.id % 1000 = 0, 1, 0), @Now, @Now
        FROM jobs j CROSS JOIN (SELECT 'text' AS task UNION ALL SELECT 'thumbnail') k
        """;

    public const string Overrides = """
        INSERT INTO overrides (job_id, priority, active, reason, technician_id, expires_at, created_at, updated_at)
        SELECT id, -id, 1, 'bench escalation', 1, @Now + INTERVAL 1 DAY, @Now, @Now FROM jobs WHERE id % 1000 = 500
        """;

    public const string OverrideLanes = """
        UPDATE ordering o JOIN overrides v ON v.job_id = o.job_id AND v.active = 1 SET o.value = v.priority, o.mode = 'override'
        """;

    public const string Snapshots = """
        INSERT INTO snapshots (at, tenant_id, ready, leased, done, dead, cancelled, claims, completions)
        SELECT @Minute - INTERVAL s.seq MINUTE, t.id, 1000, 10, 500, 1, 0, 100 + s.seq % 60, 95 + s.seq % 55
        FROM seq_1_to_1440 s CROSS JOIN tenants t
        """;

    public const string RandomJobs = "SELECT id FROM jobs ORDER BY RAND() LIMIT @Count";

    public const string LastJobs = """
        SELECT value, job_id FROM ordering WHERE blocked = 0 GROUP BY value, job_id ORDER BY value DESC, job_id DESC LIMIT @Count
        """;

    public const string Analyze = "ANALYZE TABLE jobs, items, ordering, overrides, snapshots";
}
