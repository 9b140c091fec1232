namespace Queue.Core.Sql;

/// <summary>
/// The tenant-fair claim policy (docs/DESIGN.md "Fairness"), explain, and the fairness metrics' samples. Every claim-path
/// query walks an index of the ordering table in order and stops early: its cost grows with active tenants only.
/// </summary>
public static class FairnessSql
{
    /// <summary>
    /// Tenants that have unblocked lanes, found by a skip scan spelled out: probe <c>i</c> reads the first index entry of
    /// <c>ix_ordering_tenant</c> past the tenant probe <c>i - 1</c> found (a range read of one entry, <c>LIMIT 1</c> in
    /// index order) and keeps it in the session variable <c>@queue_tenant_probe{i}</c>; probe 1 starts after @After. A
    /// probe past the last tenant finds nothing and leaves its variable NULL, so the ones after it find nothing either.
    /// One round trip for <paramref name="probes"/> tenants, whatever the lanes: cost grows with tenants, not depth.
    /// <para>Why not <c>GROUP BY tenant_id</c> and a loose index scan: MariaDB 10.11 chooses that plan from the index
    /// cardinality it read when the table was opened, and a table opened empty (a fresh server, a swapped-in table)
    /// keeps the plan that reads every lane: 17,600 entries per call in a 20k-job drain. A probe that assigns the
    /// variable it compares with reads every lane too (it is no longer a constant), hence one variable per probe.</para>
    /// </summary>
    public static string TenantProbes(int probes) => Probes(probes, false);

    /// <summary>The same for one task, @Task (<c>ix_ordering_task_tenant</c>).</summary>
    public static string TenantProbesForTask(int probes) => Probes(probes, true);

    /// <summary>The most probes one round trip sends; a caller that found this many asks again after the last one.</summary>
    public const int MaxProbes = 32;

    private static readonly string[][] ProbeTexts = [new string[MaxProbes + 1], new string[MaxProbes + 1]];

    private static string Probes(int probes, bool forTask)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(probes, 1);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(probes, MaxProbes);
        var cache = ProbeTexts[forTask ? 1 : 0];
        return cache[probes] ??= Build();

        string Build()
        {
            var (index, task, order) = forTask ? ("ix_ordering_task_tenant", " AND task = @Task", "blocked, task, tenant_id") : ("ix_ordering_tenant", "", "blocked, tenant_id");
            var text = new System.Text.StringBuilder("SET ");
            text.AppendJoin(", ", Enumerable.Range(1, probes).Select(i => $"@queue_tenant_probe{i} = NULL")).Append(";\n");
            for (var i = 1; i <= probes; i++)
            {
                var after = i == 1 ? "@After" : $"@queue_tenant_probe{i - 1}";
                text.Append($"SELECT @queue_tenant_probe{i} := tenant_id FROM ordering FORCE INDEX ({index}) WHERE blocked = 0{task} AND tenant_id > {after} ORDER BY {order} LIMIT 1;\n");
            }
            return text.ToString();
        }
    }

    /// <summary>Override lanes that are claimable, in override order: served before any tenant choice.</summary>
    public const string OverrideLanes = $"""
        SELECT job_id AS JobId, task AS Task, tenant_id AS TenantId, value AS Value
        FROM ordering FORCE INDEX (ix_ordering_mode)
        WHERE blocked = 0 AND mode = 'override' AND {OrderingSql.InCurrentBand} AND available_at <= @Now
        ORDER BY value, job_id, task
        LIMIT @Limit
        """;

    /// <summary>The same for a worker's task list; override lanes are few, so the task filter runs inside that range.</summary>
    public const string OverrideLanesForTasks = $"""
        SELECT job_id AS JobId, task AS Task, tenant_id AS TenantId, value AS Value
        FROM ordering FORCE INDEX (ix_ordering_mode)
        WHERE blocked = 0 AND mode = 'override' AND {OrderingSql.InCurrentBand} AND available_at <= @Now AND task IN @Tasks
        ORDER BY value, job_id, task
        LIMIT @Limit
        """;

    /// <summary>One tenant's claimable lanes in seed order (its override lanes come from <see cref="OverrideLanes"/>).</summary>
    public const string TenantLanes = $"""
        SELECT job_id AS JobId, task AS Task, tenant_id AS TenantId, value AS Value
        FROM ordering FORCE INDEX (ix_ordering_tenant)
        WHERE blocked = 0 AND tenant_id = @TenantId AND {OrderingSql.InCurrentBand} AND mode <> 'override' AND available_at <= @Now
        ORDER BY value, job_id, task
        LIMIT @Limit
        """;

    public const string TenantLanesForTask = $"""
        SELECT job_id AS JobId, task AS Task, tenant_id AS TenantId, value AS Value
        FROM ordering FORCE INDEX (ix_ordering_task_tenant)
        WHERE blocked = 0 AND task = @Task AND tenant_id = @TenantId AND {OrderingSql.InCurrentBand} AND mode <> 'override' AND available_at <= @Now
        ORDER BY value, job_id
        LIMIT @Limit
        """;

    /// <summary>How many tenants' heads one <see cref="TenantHeads"/> query fetches; unused slots get tenant id -1.</summary>
    public const int HeadsPerQuery = 8;

    /// <summary>
    /// The first @Per lanes (seed order, overrides aside) of each of up to eight tenants, @T0..@T7, in one round trip:
    /// one <c>LIMIT @Per</c> probe of <c>ix_ordering_tenant</c> per tenant, glued with UNION ALL. @Per is one more than
    /// the lanes the claim has visited: a lane it drained still shows as claimable until the claim closes, and with
    /// <c>LIMIT 1</c> that lane was each tenant's only offer, so a claim ended after one lane per tenant.
    /// </summary>
    public static readonly string TenantHeads = Heads(i => $"""
        (SELECT job_id AS JobId, task AS Task, tenant_id AS TenantId, value AS Value FROM ordering FORCE INDEX (ix_ordering_tenant)
         WHERE blocked = 0 AND tenant_id = @T{i} AND {OrderingSql.InCurrentBand} AND mode <> 'override' AND available_at <= @Now ORDER BY value, job_id, task LIMIT @Per)
        """);

    /// <summary>The same for one task (<c>ix_ordering_task_tenant</c>).</summary>
    public static readonly string TenantHeadsForTask = Heads(i => $"""
        (SELECT job_id AS JobId, task AS Task, tenant_id AS TenantId, value AS Value FROM ordering FORCE INDEX (ix_ordering_task_tenant)
         WHERE blocked = 0 AND task = @Task AND tenant_id = @T{i} AND {OrderingSql.InCurrentBand} AND mode <> 'override' AND available_at <= @Now ORDER BY value, job_id LIMIT @Per)
        """);

    public const string TenantWeights = "SELECT id AS Id, weight AS Weight FROM tenants";

    // ---- Explain (GET /jobs/{id}/explain). Not on the claim path: these walk the lanes ahead of one job.

    public const string ExplainJob = """
        SELECT id AS Id, tenant_id AS TenantId, state AS State,
               items_total - items_done - items_dead - items_cancelled AS Active
        FROM jobs WHERE id = @JobId AND tenant_id = @TenantId
        """;

    public const string ExplainJobAnyTenant = """
        SELECT id AS Id, tenant_id AS TenantId, state AS State,
               items_total - items_done - items_dead - items_cancelled AS Active
        FROM jobs WHERE id = @JobId
        """;

    public const string ExplainOverride = """
        SELECT priority AS Priority, expires_at AS ExpiresAt FROM overrides
        WHERE job_id = @JobId AND active = 1 AND expires_at > @Now ORDER BY id DESC LIMIT 1
        """;

    /// <summary>The jobs ahead, by why (an override, a smaller value, or an older job), and their active items: the
    /// two queries below differ only in the lanes they walk.</summary>
    private const string AheadByReason = """
        SELECT a.reason AS Reason, COUNT(*) AS Jobs, CAST(COALESCE(SUM(j.items_total - j.items_done - j.items_dead - j.items_cancelled), 0) AS SIGNED) AS Items
        FROM (
          SELECT job_id,
                 CASE WHEN MIN(mode) = 'override' THEN 'override'
                      WHEN MIN(value) < @Value AND MIN(mode) = 'smallest' THEN 'smaller'
                      ELSE 'older' END AS reason
        """;

    private const string AheadByReasonEnd = """
          GROUP BY value, job_id HAVING MIN(available_at) <= @Now
          LIMIT @Cap
        ) a JOIN jobs j ON j.id = a.job_id
        GROUP BY a.reason
        """;

    /// <summary>
    /// The seed's jobs ahead of (@Value, @JobId), grouped by why: an override, a smaller value (smallest-first), or an
    /// older job (oldest-first, or the same value and a lower id). With their active items, for the ETA. Walks
    /// ix_ordering_any in (value, job_id) order and stops after @Cap claimable jobs (ExplainService estimates the rest).
    /// </summary>
    public const string ExplainAhead = $"""
        {AheadByReason}
          FROM ordering FORCE INDEX (ix_ordering_any)
          WHERE blocked = 0 AND {OrderingSql.InCurrentBand} AND job_id <> @JobId AND (value < @Value OR (value = @Value AND job_id < @JobId))
        {AheadByReasonEnd}
        """;

    /// <summary>The same, within one tenant (tenant-fair: only the own tenant's jobs compete by value), on ix_ordering_tenant.</summary>
    public const string ExplainAheadInTenant = $"""
        {AheadByReason}
          FROM ordering FORCE INDEX (ix_ordering_tenant)
          WHERE blocked = 0 AND tenant_id = @TenantId AND {OrderingSql.InCurrentBand} AND job_id <> @JobId
            AND mode <> 'override' AND (value < @Value OR (value = @Value AND job_id < @JobId))
        {AheadByReasonEnd}
        """;

    /// <summary>Index dive (optimizer estimate) of one tenant's lanes ahead, for explanations deeper than @Cap.</summary>
    public const string DiveLanesAheadInTenant = $"""
        EXPLAIN SELECT 1 FROM ordering FORCE INDEX (ix_ordering_tenant)
        WHERE blocked = 0 AND tenant_id = @TenantId AND {OrderingSql.InCurrentBand} AND (value < @Value OR (value = @Value AND job_id < @JobId))
        """;

    /// <summary>Tenant-fair: every claimable override job of any tenant comes first (except the job itself).</summary>
    public const string ExplainOverridesAhead = $"""
        SELECT COUNT(*) AS Jobs, CAST(COALESCE(SUM(j.items_total - j.items_done - j.items_dead - j.items_cancelled), 0) AS SIGNED) AS Items
        FROM (SELECT DISTINCT job_id FROM ordering FORCE INDEX (ix_ordering_mode)
              WHERE blocked = 0 AND mode = 'override' AND {OrderingSql.InCurrentBand} AND available_at <= @Now AND job_id <> @JobId
                AND (@IsOverride = 0 OR value < @Value OR (value = @Value AND job_id < @JobId))
              LIMIT @Cap) o
        JOIN jobs j ON j.id = o.job_id
        """;

    /// <summary>Completions so far, summed over tenants: the ETA's throughput is its growth over time.</summary>
    public const string TotalCompletions = "SELECT CAST(COALESCE(SUM(completions), 0) AS SIGNED) FROM tenant_counters";

    // ---- The fairness monitor of each Api process (samples every few seconds, a report every minute).


    public const string FinishedJobs = $"""
        SELECT tenant_id AS TenantId, id AS JobId, items_total AS Items, created_at AS CreatedAt, finished_at AS FinishedAt
        FROM jobs FORCE INDEX (ix_jobs_state_finished)
        WHERE state = {JobStateSql.Done} AND finished_at > @Since
        """;

    public const string TenantNames = "SELECT id AS Id, name AS Name FROM tenants";

    public const string UpsertReport = """
        INSERT INTO fairness_reports (instance, at, report) VALUES (@Instance, @At, @Report)
        ON DUPLICATE KEY UPDATE at = VALUES(at), report = VALUES(report)
        """;

    public const string RecentReports = """
        SELECT instance AS Instance, at AS At, report AS Report FROM fairness_reports WHERE at > @Since ORDER BY instance
        """;

    private static string Heads(Func<int, string> probe) =>
        string.Join("\nUNION ALL\n", Enumerable.Range(0, HeadsPerQuery).Select(probe));
}
