using Dapper;
using MySqlConnector;
using Queue.Core.Sql;

namespace Queue.Core.Ordering;

/// <summary>Claimable jobs (and their active items) ahead of a job; <see cref="Exact"/> is false for an estimate.</summary>
public readonly record struct JobsAhead(long Jobs, long Items, bool Exact);

/// <summary>
/// How far down the ordering a job is, at a cost that does not grow with the queue (docs/CONTRACT.md "GET /jobs/{id}": "Position at
/// depth"): exact while at most <see cref="ExactLimit"/> claimable jobs are ahead, an estimate beyond. The estimate is
/// an index dive (the optimizer's records_in_range on ix_ordering_any: two B-tree descents), so a job a million deep
/// costs what a job ten deep does. See docs/DESIGN.md "Position at depth".
/// </summary>
public static class QueuePosition
{
    /// <summary>Up to this many jobs ahead, the position is exact.</summary>
    public const int ExactLimit = 1000;

    /// <summary>
    /// Above this many lanes ahead per lane of the job (by the dive), the exact count is not even tried. The dive is
    /// exact for short ranges; lanes that are not claimable (all leased, backing off) make it an over-count, so the 2x
    /// margin keeps "exact up to 1,000" true unless more than half the lanes ahead are idle. The walk costs about 2.5 ms
    /// of database time at its cap: a margin of 20x made it run on every POST /jobs up to 20,000 jobs deep, the largest
    /// single cost of a one-document submission (docs/DESIGN.md "Position at depth").
    /// </summary>
    public const long WalkLimitLanesPerLane = 2 * ExactLimit;

    /// <param name="lanesPerJob">The job's own lane count: the dive counts lanes, and jobs like this one have this many.</param>
    public static async Task<JobsAhead> AheadAsync(MySqlConnection conn, long jobId, long value, long lanesPerJob, DateTime now,
        Func<CancellationToken, Task<double>> itemsPerJob, CancellationToken ct)
    {
        var lanes = await DiveAsync(conn, OrderingSql.DiveLanesAhead, new { Value = value, JobId = jobId }, ct);
        var estimate = lanes / Math.Max(1, lanesPerJob);
        if (lanes <= WalkLimitLanesPerLane * Math.Max(1, lanesPerJob))
        {
            var counted = await conn.QuerySingleAsync<CountRow>(new CommandDefinition(OrderingSql.CappedJobsAhead,
                new { Value = value, JobId = jobId, Now = now, Cap = ExactLimit + 1 }, cancellationToken: ct));
            if (counted.Jobs <= ExactLimit)
            {
                return new JobsAhead(counted.Jobs, counted.Items, true);
            }
            estimate = Math.Max(estimate, counted.Jobs);
        }
        var perJob = await itemsPerJob(ct);
        return new JobsAhead(estimate, (long)Math.Round(estimate * perJob), false);
    }

    /// <summary>The optimizer's row estimate for the range of an <c>EXPLAIN SELECT</c> on one table.</summary>
    public static async Task<long> DiveAsync(MySqlConnection conn, string explain, object args, CancellationToken ct)
    {
        await using var reader = await conn.ExecuteReaderAsync(new CommandDefinition(explain, args, cancellationToken: ct));
        var rows = 0L;
        var ordinal = reader.GetOrdinal("rows");
        while (await reader.ReadAsync(ct))
        {
            if (!await reader.IsDBNullAsync(ordinal, ct))
            {
                rows = Math.Max(rows, Convert.ToInt64(reader.GetValue(ordinal), System.Globalization.CultureInfo.InvariantCulture));
            }
        }
        return rows;
    }

    private sealed class CountRow
    {
        public long Jobs { get; set; }

        public long Items { get; set; }
    }
}
