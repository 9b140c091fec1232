using Dapper;
using MySqlConnector;
using Queue.Core.Sql;

namespace Queue.Core.Ordering;

/// <summary>Claimable jobs (and their active items) ahead of a job; <see cref="Exact"/> is false for an estimate.</summary>
public readonly record struct JobsAhead(long Jobs, long Items, bool Exact);

/// <summary>What the database said about the jobs ahead of one job: the dive's estimate, and the walk's count when it ran.</summary>
public readonly record struct AheadFacts(long EstimatedJobs, JobsAhead? Counted);

/// <summary>A job just created, where its lanes went: its value and its lane count.</summary>
public readonly record struct NewJobPlace(long JobId, long Value, long Lanes);

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
        JobsAhead? counted = null;
        if (lanes <= WalkLimitLanesPerLane * Math.Max(1, lanesPerJob))
        {
            var row = await conn.QuerySingleAsync<CountRow>(new CommandDefinition(OrderingSql.CappedJobsAhead,
                new { Value = value, JobId = jobId, Now = now, Cap = ExactLimit + 1 }, cancellationToken: ct));
            counted = new JobsAhead(row.Jobs, row.Items, row.Jobs <= ExactLimit);
        }
        return await ResolveAsync(new AheadFacts(estimate, counted), itemsPerJob, ct);
    }

    /// <summary>The position from what the database said: the walk's exact count when it has one, else an estimate.</summary>
    public static async Task<JobsAhead> ResolveAsync(AheadFacts facts, Func<CancellationToken, Task<double>> itemsPerJob, CancellationToken ct)
    {
        if (facts.Counted is { Exact: true } exact)
        {
            return exact;
        }
        var estimate = Math.Max(facts.EstimatedJobs, facts.Counted?.Jobs ?? 0);
        var perJob = await itemsPerJob(ct);
        return new JobsAhead(estimate, (long)Math.Round(estimate * perJob), false);
    }

    /// <summary>
    /// The jobs ahead of each of a group of jobs just created together, for the price of one job's: one dive for the
    /// first of them in claim order, and when the queue ahead is short one walk, up to the last of them, that lists
    /// the jobs it passes (each group job's count is the rows before it). Deep in the queue, each job's estimate is the
    /// first one's plus the group's jobs ahead of it. The group's own jobs are claimable and never blocked.
    /// </summary>
    public static async Task<Dictionary<long, AheadFacts>> OfNewJobsAsync(MySqlConnection conn, IReadOnlyList<NewJobPlace> jobs, DateTime now,
        CancellationToken ct)
    {
        var sorted = jobs.OrderBy(j => j.Value).ThenBy(j => j.JobId).ToList();
        var facts = new Dictionary<long, AheadFacts>(sorted.Count);
        if (sorted.Count == 0)
        {
            return facts;
        }
        var first = sorted[0];
        var lanesPerJob = Math.Max(1, first.Lanes);
        var lanes = await DiveAsync(conn, OrderingSql.DiveLanesAhead, new { Value = first.Value, JobId = first.JobId }, ct);
        if (lanes > WalkLimitLanesPerLane * lanesPerJob)
        {
            for (var k = 0; k < sorted.Count; k++)
            {
                facts[sorted[k].JobId] = new AheadFacts(lanes / lanesPerJob + k, null);
            }
            return facts;
        }
        var last = sorted[^1];
        var cap = ExactLimit + sorted.Count;
        var rows = (await conn.QueryAsync<AheadRow>(new CommandDefinition(OrderingSql.CappedJobsAheadList,
            new { Value = last.Value, JobId = last.JobId, Now = now, Cap = cap }, cancellationToken: ct))).AsList();
        var truncated = rows.Count >= cap;
        long passed = 0;
        long items = 0;
        var next = 0;
        for (var k = 0; k < sorted.Count; k++)
        {
            var job = sorted[k];
            while (next < rows.Count && (rows[next].Value, rows[next].JobId).CompareTo((job.Value, job.JobId)) < 0)
            {
                passed++;
                items += rows[next].Active;
                next++;
            }
            // Every row before this job is listed when the list reaches the job itself (or ends untruncated).
            var complete = next < rows.Count ? rows[next].JobId == job.JobId : !truncated;
            facts[job.JobId] = new AheadFacts(lanes / lanesPerJob + k, new JobsAhead(passed, items, complete && passed <= ExactLimit));
        }
        return facts;
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

    private sealed record AheadRow(long Value, long JobId, long Active);

    private sealed class CountRow
    {
        public long Jobs { get; set; }

        public long Items { get; set; }
    }
}
