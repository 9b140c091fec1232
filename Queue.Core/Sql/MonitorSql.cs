namespace Queue.Core.Sql;

/// <summary>The fairness monitor's bounded reads (docs/DESIGN.md "Invariants that failures must not break"): their cost does not grow with the backlog.</summary>
public static class MonitorSql
{
    /// <summary>
    /// The jobs at the head of the ordering with a claimable lane, and their active items: at most @MaxLanes lanes in
    /// claim order (rides ix_ordering_any: blocked, value, job_id, task; the hint is checked on the lane's row, which
    /// the tenant is read from anyway). The head is what the next claims choose among; jobs deeper in the backlog are not sampled.
    /// </summary>
    public const string SampleHead = $"""
        SELECT h.tenant_id AS TenantId, h.job_id AS JobId,
               j.items_total - j.items_done - j.items_dead - j.items_cancelled AS Active
        FROM (SELECT job_id, MIN(tenant_id) AS tenant_id
              FROM (SELECT job_id, tenant_id FROM ordering FORCE INDEX (ix_ordering_any)
                    WHERE blocked = 0 AND {OrderingSql.InCurrentBand} AND available_at <= @Now ORDER BY value, job_id LIMIT @MaxLanes) lanes
              GROUP BY job_id) h
        JOIN jobs j ON j.id = h.job_id
        """;
}
