namespace Queue.Core.Sql;

/// <summary>
/// The ordering preview (docs/DESIGN.md "Preview"): read-only statements that stream every job with work in the order
/// a claim would meet it, so the caller keeps only what it shows (Ordering.OrderingPreview). Nothing here writes.
/// </summary>
public static class PreviewSql
{
    /// <summary>
    /// Every job with work and the value the next rewrite into @Mode would give it, computed by the rewrite's own
    /// statement fragments (<see cref="RewriteSql.FillValuesFromLanes"/>, <see cref="RewriteSql.NewValue"/>), so the
    /// ranks, counts and overrides agree with it by construction. @WhatIf is a JSON array of {"j": job, "v": value}:
    /// overrides a technician is considering, which win over the stored ones. Rides what the rewrite's fill rides (one
    /// pass over ordering's PRIMARY KEY grouped by job, jobs by PRIMARY KEY), plus a PRIMARY KEY lookup per job for its
    /// tenant and, with @Task, a PRIMARY KEY probe of (job_id, task). The sort is the server's: this process streams.
    /// @OverridesFirst (tenant-fair) sorts override jobs ahead of the rest, as claims serve them.
    /// </summary>
    public const string NextRewrite = """
        SELECT r.job_id AS JobId, r.tenant_id AS TenantId, CAST(r.remaining AS SIGNED) AS Items, CAST(r.blocked AS SIGNED) AS Blocked,
               CAST(r.priority IS NOT NULL AS SIGNED) AS IsOverride, CAST(r.what_if AS SIGNED) AS WhatIf,
        """ + "\n       " + RewriteSql.NewValue + " AS Value\nFROM (\n  SELECT r.job_id, r.has_work, r.remaining, r.blocked, r.age_rank, t.tenant_id,\n"
        + "         COALESCE(w.priority, r.priority) AS priority, w.priority IS NOT NULL AS what_if\n  "
        + RewriteSql.FillValuesFromLanes + "\n" + RewriteSql.FillValuesFromJobs + "\n" + """
          STRAIGHT_JOIN jobs t ON t.id = r.job_id
          LEFT JOIN JSON_TABLE(@WhatIf, '$[*]' COLUMNS (job_id BIGINT PATH '$.j', priority BIGINT PATH '$.v')) w ON w.job_id = r.job_id
          WHERE r.has_work = 1 AND (@Task IS NULL OR EXISTS (SELECT 1 FROM ordering x WHERE x.job_id = r.job_id AND x.task = @Task))
        ) r
        ORDER BY IF(@OverridesFirst = 1, IsOverride, 0) DESC, Value, JobId
        """;

    /// <summary>
    /// Every job with work and the value its lanes carry now (band removed, <see cref="RewriteSql.LaneValue"/>), in the
    /// same shape and order as <see cref="NextRewrite"/>: today's positions, and the base of a what-if. One pass over
    /// ordering's PRIMARY KEY grouped by job, jobs by PRIMARY KEY.
    /// </summary>
    public const string Current = $"""
        SELECT r.job_id AS JobId, r.tenant_id AS TenantId, CAST(r.remaining AS SIGNED) AS Items, CAST(r.blocked AS SIGNED) AS Blocked,
               CAST(r.is_override OR w.priority IS NOT NULL AS SIGNED) AS IsOverride, CAST(w.priority IS NOT NULL AS SIGNED) AS WhatIf,
               COALESCE(w.priority, r.value) AS Value, r.mode AS Mode
        FROM (
          SELECT l.job_id, l.tenant_id, l.blocked, l.value, l.mode, l.mode = 'override' AS is_override,
                 j.items_total - j.items_done - j.items_dead - j.items_cancelled AS remaining
          FROM (SELECT o.job_id, MIN(o.tenant_id) AS tenant_id, MAX(o.blocked) AS blocked, MIN({RewriteSql.LaneValue}) AS value, MIN(o.mode) AS mode
                FROM ordering o
                WHERE @Task IS NULL OR EXISTS (SELECT 1 FROM ordering x WHERE x.job_id = o.job_id AND x.task = @Task)
                GROUP BY o.job_id) l
          STRAIGHT_JOIN jobs j ON j.id = l.job_id
          WHERE j.state <> {JobStateSql.Cancelled} AND j.items_total - j.items_done - j.items_dead - j.items_cancelled > 0
        ) r
        LEFT JOIN JSON_TABLE(@WhatIf, '$[*]' COLUMNS (job_id BIGINT PATH '$.j', priority BIGINT PATH '$.v')) w ON w.job_id = r.job_id
        ORDER BY IF(@OverridesFirst = 1, IsOverride, 0) DESC, Value, JobId
        """;

    /// <summary>Names of the few jobs a preview shows (PRIMARY KEY lookups).</summary>
    public const string JobNames = "SELECT id AS Id, name AS Name FROM jobs WHERE id IN @Ids";

    /// <summary>Tenants' names and weights (PRIMARY KEY scan of a small table).</summary>
    public const string Tenants = "SELECT id AS Id, name AS Name, weight AS Weight FROM tenants";

    /// <summary>
    /// Items completed in the Scheduler's minute snapshots since @Since (PRIMARY KEY range on (at, tenant_id)), for a
    /// one-shot process that has not watched the throughput itself.
    /// </summary>
    public const string RecentCompletions = """
        SELECT CAST(COALESCE(SUM(completions), 0) AS SIGNED) AS Completions, MIN(at) AS First, MAX(at) AS Last
        FROM snapshots WHERE at >= @Since
        """;
}
