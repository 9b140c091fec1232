using Queue.Core.Sql;

namespace Queue.Bench.Sql;

/// <summary>The soak's looks into the database (Queue.Bench Soak), outside the product's paths.</summary>
public static class SoakSql
{
    /// <summary>
    /// What a cut-off drain left pending, each item with its lane as a claim sees it: hint, blocked, mode and whether
    /// the lane sits in the band claims walk. Up to ten, by id; the primary key and the lane's primary key.
    /// </summary>
    public const string Pending = $"""
        SELECT i.id, i.job_id, i.task, i.state, i.active, i.attempts, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), i.due_at) / 1e6,
               TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), i.lease_expires_at) / 1e6, j.state,
               TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), o.available_at) / 1e6, o.blocked, i.last_error,
               o.mode, o.{OrderingSql.InCurrentBand}
        FROM items i JOIN jobs j ON j.id = i.job_id LEFT JOIN ordering o ON o.job_id = i.job_id AND o.task = i.task
        WHERE i.state < 2 ORDER BY i.id LIMIT 10
        """;
}
