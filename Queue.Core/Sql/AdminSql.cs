namespace Queue.Core.Sql;

/// <summary>
/// The technicians' views and actions. Every list is keyset-paged and driven by an index, so pages stay fast with
/// 100k jobs in the ordering; nothing here scans items except through <c>ix_items_job_state</c> for one job.
/// </summary>
public static class AdminSql
{
    // ---- Queue view: lanes grouped per job, in claim order (blocked last), after a keyset cursor --------------------

    /// <summary>What a queue page reads of each job's lanes; every column is in each of the indexes below (covering).</summary>
    private const string QueuePageColumns = """
        SELECT job_id AS JobId, blocked AS Blocked, value AS Value, MIN(available_at) AS AvailableAt,
               COUNT(*) AS Lanes, GROUP_CONCAT(task ORDER BY task SEPARATOR ',') AS Tasks
        """;

    /// <summary>
    /// The keyset cursor: past (@Blocked, @Value, @JobId) in the order the next claim walks (blocked, value, job_id),
    /// spelled out as ORs so the range optimizer turns it into index ranges (row constructors are not). An equality on
    /// the index's other leading column goes beside it: the same ranges and the same rows read as with the equality
    /// repeated in each OR (EXPLAIN and Handler_read counts, ix_ordering_task, 20k lanes, 2026-11-29).
    /// </summary>
    private const string QueuePageAfter = "(blocked > @Blocked OR (blocked = @Blocked AND (value > @Value OR (value = @Value AND job_id > @JobId))))";

    private const string QueuePageOrder = """
        GROUP BY blocked, value, job_id
        ORDER BY blocked, value, job_id
        LIMIT @Limit
        """;

    /// <summary>One row per job, in the order the next claim walks (<c>ix_ordering_any</c>: blocked, value, job_id).</summary>
    public const string QueuePage = $"""
        {QueuePageColumns} FROM ordering FORCE INDEX (ix_ordering_any)
        WHERE {QueuePageAfter}
        {QueuePageOrder}
        """;

    /// <summary>The same for the workers that ask for one task (<c>ix_ordering_task</c>: blocked, task, value, job_id).</summary>
    public const string QueuePageForTask = $"""
        {QueuePageColumns} FROM ordering FORCE INDEX (ix_ordering_task)
        WHERE task = @Task AND {QueuePageAfter}
        {QueuePageOrder}
        """;

    /// <summary>One tenant's jobs, in claim order (<c>ix_ordering_tenant</c>: blocked, tenant_id, value, job_id).</summary>
    public const string QueuePageForTenant = $"""
        {QueuePageColumns} FROM ordering FORCE INDEX (ix_ordering_tenant)
        WHERE tenant_id = @TenantId AND {QueuePageAfter}
        {QueuePageOrder}
        """;

    /// <summary>A job row as the Admin shows it, with its tenant's name (primary-key lookups only).</summary>
    private const string JobRows = """
        SELECT j.id AS Id, j.name AS Name, j.tenant_id AS TenantId, t.name AS TenantName, j.state AS State,
               j.blocked AS Blocked, j.tasks AS Tasks, j.documents AS Documents, j.items_total AS ItemsTotal,
               j.items_done AS ItemsDone, j.items_dead AS ItemsDead, j.items_cancelled AS ItemsCancelled,
               j.created_at AS CreatedAt, j.closed_at AS ClosedAt, j.finished_at AS FinishedAt
        FROM jobs j JOIN tenants t ON t.id = j.tenant_id
        """;

    /// <summary>Job rows for one page of the queue view.</summary>
    public const string JobsByIds = $"""
        {JobRows}
        WHERE j.id IN @Ids
        """;

    public const string JobById = $"""
        {JobRows}
        WHERE j.id = @JobId
        """;

    /// <summary>Newest jobs first, keyset by id (primary key, descending).</summary>
    public const string RecentJobs = """
        SELECT j.id AS Id, j.name AS Name, j.tenant_id AS TenantId, t.name AS TenantName, j.state AS State,
               j.blocked AS Blocked, j.tasks AS Tasks, j.documents AS Documents, j.items_total AS ItemsTotal,
               j.items_done AS ItemsDone, j.items_dead AS ItemsDead, j.items_cancelled AS ItemsCancelled,
               j.created_at AS CreatedAt, j.closed_at AS ClosedAt, j.finished_at AS FinishedAt
        FROM jobs j JOIN tenants t ON t.id = j.tenant_id
        WHERE j.id < @Before
        ORDER BY j.id DESC
        LIMIT @Limit
        """;

    /// <summary>The mode every lane of the job carries (they all share it).</summary>
    public const string ModesByIds = """
        SELECT job_id AS JobId, MIN(mode) AS Mode FROM ordering WHERE job_id IN @Ids GROUP BY job_id
        """;

    /// <summary>The override in force for each job, with who set it.</summary>
    public const string ActiveOverridesByIds = """
        SELECT o.id AS Id, o.job_id AS JobId, o.priority AS Priority, o.reason AS Reason, o.expires_at AS ExpiresAt,
               o.created_at AS CreatedAt, COALESCE(tech.login, CONCAT('#', o.technician_id)) AS SetBy
        FROM overrides o LEFT JOIN technicians tech ON tech.id = o.technician_id
        WHERE o.job_id IN @Ids AND o.active = 1
        ORDER BY o.id DESC
        """;

    /// <summary>Every override a job ever had, newest first.</summary>
    public const string OverridesOfJob = """
        SELECT o.id AS Id, o.job_id AS JobId, o.priority AS Priority, o.reason AS Reason, o.expires_at AS ExpiresAt,
               o.created_at AS CreatedAt, COALESCE(tech.login, CONCAT('#', o.technician_id)) AS SetBy,
               o.active AS Active, o.updated_at AS UpdatedAt
        FROM overrides o LEFT JOIN technicians tech ON tech.id = o.technician_id
        WHERE o.job_id = @JobId
        ORDER BY o.id DESC
        LIMIT 50
        """;

    /// <summary>The lowest value any unblocked job has: a bump below it reaches position 1.</summary>
    public const string LowestValue = "SELECT MIN(value) FROM ordering WHERE blocked = 0";

    public const string LanesOfJob = """
        SELECT task AS Task, value AS Stored, mode AS Mode, blocked AS Blocked, available_at AS AvailableAt, updated_at AS UpdatedAt
        FROM ordering WHERE job_id = @JobId ORDER BY task
        """;

    // ---- Job page ------------------------------------------------------------------------------------------------


    public const string DeadItemsOfJob = $"""
        SELECT id AS Id, document_id AS DocumentId, task AS Task, attempts AS Attempts, last_error AS LastError,
               updated_at AS UpdatedAt
        FROM items
        WHERE job_id = @JobId AND state = {ItemStateSql.Dead} AND id > @After
        ORDER BY id
        LIMIT @Limit
        """;

    public const string ErrorsOfItems = """
        SELECT item_id AS ItemId, attempt AS Attempt, error AS Error, at AS At
        FROM item_errors WHERE item_id IN @Ids ORDER BY item_id, id
        """;

    // ---- Actions (inside one READ COMMITTED transaction each) --------------------------------------------------------

    /// <summary>Serialises technicians' actions on one job against each other and against completions.</summary>
    public const string LockJob = """
        SELECT id AS Id, tenant_id AS TenantId, state AS State, blocked AS Blocked, items_total AS ItemsTotal,
               items_done AS ItemsDone, items_dead AS ItemsDead, items_cancelled AS ItemsCancelled
        FROM jobs WHERE id = @JobId FOR UPDATE
        """;

    public const string CurrentOverride = """
        SELECT o.id AS Id, o.job_id AS JobId, o.priority AS Priority, o.reason AS Reason, o.expires_at AS ExpiresAt,
               o.created_at AS CreatedAt, COALESCE(tech.login, CONCAT('#', o.technician_id)) AS SetBy
        FROM overrides o LEFT JOIN technicians tech ON tech.id = o.technician_id
        WHERE o.job_id = @JobId AND o.active = 1
        ORDER BY o.id DESC LIMIT 1
        """;

    public const string DeactivateOverrides = """
        UPDATE overrides SET active = 0, updated_at = @Now WHERE job_id = @JobId AND active = 1
        """;

    public const string InsertOverride = """
        INSERT INTO overrides (job_id, priority, active, reason, technician_id, expires_at, created_at, updated_at)
        VALUES (@JobId, @Priority, 1, @Reason, @TechnicianId, @ExpiresAt, @Now, @Now);
        SELECT LAST_INSERT_ID();
        """;

    public const string SetJobBlocked = "UPDATE jobs SET blocked = @Blocked, updated_at = @Now WHERE id = @JobId";

    /// <summary>Dead items back to ready, due now, with a fresh attempt budget; their error history stays.</summary>
    public const string RequeueDeadItems = $"""
        UPDATE items
        SET state = {ItemStateSql.Ready}, attempts = 0, due_at = @Now, lease_token = NULL, lease_expires_at = NULL, worker = NULL, updated_at = @Now
        WHERE job_id = @JobId AND state = {ItemStateSql.Dead}
        """;

    public const string RequeueDeadItem = $"""
        UPDATE items
        SET state = {ItemStateSql.Ready}, attempts = 0, due_at = @Now, lease_token = NULL, lease_expires_at = NULL, worker = NULL, updated_at = @Now
        WHERE id = @ItemId AND job_id = @JobId AND state = {ItemStateSql.Dead}
        """;

    /// <summary>
    /// A done job with requeued items has work again. finished_at is assigned before state because MySQL assigns
    /// left to right, so the second test would otherwise see the new state.
    /// </summary>
    public const string AfterRequeue = $"""
        UPDATE jobs
        SET items_dead = items_dead - @Count,
            finished_at = IF(state = {JobStateSql.Done}, NULL, finished_at),
            state = IF(state = {JobStateSql.Done}, {JobStateSql.Closed}, state),
            updated_at = @Now
        WHERE id = @JobId
        """;

    // ---- Audit ---------------------------------------------------------------------------------------------------

    public const string InsertAudit = """
        INSERT INTO audit_log (at, actor, action, job_id, tenant_id, reason, before_json, after_json)
        VALUES (@At, @Actor, @Action, @JobId, @TenantId, @Reason, @BeforeJson, @AfterJson)
        """;

    public const string AuditColumns = """
        a.id AS Id, a.at AS At, a.actor AS Actor, a.action AS Action, a.job_id AS JobId, a.tenant_id AS TenantId,
        t.name AS TenantName, a.reason AS Reason, a.before_json AS BeforeJson, a.after_json AS AfterJson
        """;

    public const string AuditPage = "SELECT " + AuditColumns + """
         FROM audit_log a LEFT JOIN tenants t ON t.id = a.tenant_id
        WHERE a.id < @Before
        ORDER BY a.id DESC
        LIMIT @Limit
        """;

    public const string AuditPageForJob = "SELECT " + AuditColumns + """
         FROM audit_log a LEFT JOIN tenants t ON t.id = a.tenant_id
        WHERE a.job_id = @JobId AND a.id < @Before
        ORDER BY a.id DESC
        LIMIT @Limit
        """;

    // ---- Dashboard -----------------------------------------------------------------------------------------------

    /// <summary>
    /// Depth per tenant from the jobs counters (no item scan): one sequential pass over jobs, tenant names joined in
    /// memory. JobsWithWork counts the jobs that have lanes in the ordering (active items, not cancelled).
    /// </summary>
    public const string DepthByTenant = $"""
        SELECT tenant_id AS TenantId,
               CAST(SUM(state IN ({JobStateSql.Open}, {JobStateSql.Closed})) AS SIGNED) AS UnfinishedJobs,
               CAST(SUM(state <> {JobStateSql.Cancelled} AND items_total > items_done + items_dead + items_cancelled) AS SIGNED) AS JobsWithWork,
               CAST(SUM(items_total - items_done - items_dead - items_cancelled) AS SIGNED) AS Active,
               CAST(SUM(items_done) AS SIGNED) AS Done,
               CAST(SUM(items_dead) AS SIGNED) AS Dead,
               CAST(SUM(items_cancelled) AS SIGNED) AS Cancelled
        FROM jobs IGNORE INDEX (ix_jobs_tenant, ix_jobs_tenant_state)
        GROUP BY tenant_id
        """;

    public const string TenantNames = "SELECT id AS Id, name AS Name FROM tenants";

    /// <summary>Claims and completions per minute, all tenants together, from the Scheduler's minute snapshots.</summary>
    public const string ThroughputSince = """
        SELECT at AS At, CAST(SUM(claims) AS SIGNED) AS Claims, CAST(SUM(completions) AS SIGNED) AS Completions
        FROM snapshots WHERE at >= @Since
        GROUP BY at ORDER BY at
        """;

    /// <summary>
    /// Every tenant's claims in the newest minute snapshot, its weight and what it had ready at that minute's end. On the
    /// snapshots PK (at, tenant_id): MAX(at) reads the index's last entry, then one range of a row per tenant; tenants by PK.
    /// </summary>
    public const string LastMinuteShares = """
        SELECT s.at AS At, s.tenant_id AS TenantId, t.name AS TenantName, t.weight AS Weight, s.claims AS Claims, s.ready AS Ready
        FROM snapshots s JOIN tenants t ON t.id = s.tenant_id
        WHERE s.at = (SELECT MAX(at) FROM snapshots)
        """;

    /// <summary>The oldest job that has work the next claim could take.</summary>
    public const string OldestWaiting = """
        SELECT o.job_id FROM ordering o
        WHERE o.blocked = 0 AND o.available_at <= @Now
        ORDER BY o.job_id LIMIT 1
        """;

    public const string LastRewrite = """
        SELECT period_start AS PeriodStart, mode AS Mode, jobs_ranked AS JobsRanked, duration_ms AS DurationMs,
               finished_at AS FinishedAt, instance AS Instance
        FROM rewrite_log ORDER BY id DESC LIMIT 1
        """;

    // ---- Workers -------------------------------------------------------------------------------------------------

    /// <summary>
    /// Who holds leases: items in state 1 grouped by tenant and worker, so one pass serves both the dashboard's leased
    /// column and the workers list. Only jobs with active items are probed, each through ix_items_job_state, so
    /// finished history costs nothing. Expired leases are counted apart: the next claim reclaims them.
    /// </summary>
    public const string LeaseHolders = $"""
        SELECT j.tenant_id AS TenantId,
               COALESCE(i.worker, '') AS Worker,
               CAST(SUM(i.due_at > @Now) AS SIGNED) AS Live,
               CAST(SUM(i.due_at <= @Now) AS SIGNED) AS Expired,
               COUNT(DISTINCT i.job_id) AS Jobs,
               MIN(i.updated_at) AS Since,
               MAX(i.updated_at) AS LastSeen,
               MIN(CASE WHEN i.due_at > @Now THEN i.due_at END) AS NextExpiry
        FROM jobs j JOIN items i FORCE INDEX (ix_items_job_state) ON i.job_id = j.id AND i.state = {ItemStateSql.Leased}
        WHERE j.items_total > j.items_done + j.items_dead + j.items_cancelled
        GROUP BY j.tenant_id, COALESCE(i.worker, '')
        """;

    /// <summary>Worker and customer keys, all of them, for the keys pages.</summary>
    public const string KeyById = """
        SELECT id AS Id, tenant_id AS TenantId, role AS Role, prefix AS Prefix, label AS Label,
               created_at AS CreatedAt, revoked_at AS RevokedAt
        FROM api_keys WHERE id = @Id
        """;
}
