using Dapper;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Core.Jobs;
using Queue.Core.Ordering;
using Queue.Core.Sql;

namespace Queue.Core.Fairness;

/// <summary>How many jobs are ahead, by why. <c>AnotherTenantsTurn</c> counts tenants whose fair turn comes first (tenant-fair only).</summary>
public sealed record AheadReasons(long Smaller, long Older, long Override, long AnotherTenantsTurn);

/// <summary>An ETA range: the earliest assumes the recent throughput all goes this way; the latest, the worst share.</summary>
public sealed record EtaRange(DateTime Earliest, DateTime Latest, double ItemsPerSecond);

public sealed record NextRewrite(DateTime At, string Mode);

/// <summary>GET /jobs/{id}/explain: why the job is where it is, and when it should be done.</summary>
public sealed record JobExplanation(
    long JobId, long? Position, bool PositionExact, string Policy, string Mode, long? Value, bool Override, DateTime? OverrideUntil,
    bool Blocked, long JobsAhead, AheadReasons Ahead, NextRewrite NextRewrite, EtaRange? Eta, string Summary);

/// <summary>
/// Explains a job's position under the policy in force (docs/DESIGN.md "Explain"). Seed: the jobs with a lower
/// (value, id), by reason. Tenant-fair: override jobs, then the own tenant's jobs with a lower (value, id), then one
/// head job per other tenant whose turn comes first. Not on the claim path: it reads the lanes ahead of one job.
/// </summary>
public sealed class ExplainService(MySqlDataSource db, TimeProvider clock, OrderingCalendar calendar, IOptions<OrderingOptions> options,
    FairShare fair, ThroughputMeter throughput)
{
    /// <summary>Null when the job is not the tenant's (or does not exist).</summary>
    public Task<JobExplanation?> ExplainAsync(long tenantId, long jobId, CancellationToken ct) => ExplainAsync((long?)tenantId, jobId, ct);

    /// <summary>Any tenant's job, for technicians.</summary>
    public Task<JobExplanation?> ExplainAnyTenantAsync(long jobId, CancellationToken ct) => ExplainAsync(null, jobId, ct);

    private async Task<JobExplanation?> ExplainAsync(long? tenantId, long jobId, CancellationToken ct)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        await using var conn = await db.OpenConnectionAsync(ct);
        var job = tenantId is { } t
            ? await conn.QuerySingleOrDefaultAsync<JobRow>(Cmd(FairnessSql.ExplainJob, new { JobId = jobId, TenantId = t }, ct))
            : await conn.QuerySingleOrDefaultAsync<JobRow>(Cmd(FairnessSql.ExplainJobAnyTenant, new { JobId = jobId }, ct));
        if (job is null)
        {
            return null;
        }
        var policy = options.Value.Policy;
        var period = calendar.At(clock.GetUtcNow());
        var next = new NextRewrite(period.End.UtcDateTime, period.NextMode == OrderingMode.Smallest ? "smallest" : "oldest");
        var lane = await conn.QuerySingleAsync<JobLanesRow>(Cmd(JobSql.JobLanes, new { JobId = jobId, Now = now }, ct));
        var ov = await conn.QuerySingleOrDefaultAsync<OverrideRow>(Cmd(FairnessSql.ExplainOverride, new { JobId = jobId, Now = now }, ct));
        var isOverride = lane.Mode == OrderingLanes.ModeOverride;
        var mode = isOverride || lane.Mode is null ? period.ModeName : lane.Mode;
        var none = new AheadReasons(0, 0, 0, 0);
        if (lane.Lanes == 0 || lane.Value is null || job.State == JobStates.Cancelled)
        {
            var why = job.State == JobStates.Cancelled ? "The job is cancelled: nothing of it is handed out."
                : job.Active <= 0 ? "The job has no work left to hand out."
                : "The job has no items in the ordering yet.";
            return new JobExplanation(jobId, null, true, policy, mode, null, ov is not null, ov?.ExpiresAt, false, 0, none, next, null, why);
        }
        var value = lane.Value.Value;
        var leased = await conn.ExecuteScalarAsync<long>(Cmd(JobSql.LiveLeases, new { JobId = jobId, Now = now }, ct));
        if (lane.Blocked == 1 || lane.Claimable == 0 || job.Active - leased <= 0)
        {
            var why = lane.Blocked == 1 ? "A technician blocked the job: it is not handed out until unblocked."
                : "Every item of the job is leased or waiting out a retry backoff: nothing is ready right now.";
            return new JobExplanation(jobId, null, true, policy, mode, OrderingBand.Shown(value), ov is not null, ov?.ExpiresAt, lane.Blocked == 1, 0, none, next, null, why);
        }

        AheadReasons reasons;
        var exact = true;
        long itemsBefore;      // items that go before this job's own whatever the shares (overrides, and all of them under seed)
        long sharedItems;      // items that compete with the other tenants under tenant-fair (own tenant's ahead + own)
        double worstShare = 1; // the job's tenant's smallest share of the throughput while the others stay busy
        if (policy == "tenant-fair")
        {
            var overrides = await conn.QuerySingleAsync<CountRow>(Cmd(FairnessSql.ExplainOverridesAhead,
                new { JobId = jobId, Now = now, Value = value, IsOverride = isOverride ? 1 : 0, Cap = Cap }, ct));
            var own = isOverride ? [] : (await conn.QueryAsync<ReasonRow>(Cmd(FairnessSql.ExplainAheadInTenant,
                new { JobId = jobId, job.TenantId, Now = now, Value = value, Cap = Cap }, ct))).AsList();
            exact = overrides.Jobs <= QueuePosition.ExactLimit;
            if (own.Sum(r => r.Jobs) > QueuePosition.ExactLimit)
            {
                exact = false;
                own = await EstimateRestAsync(conn, FairnessSql.DiveLanesAheadInTenant, new { job.TenantId, Value = value, JobId = jobId }, own, lane, ct);
            }
            var withLanes = new HashSet<long>();
            await new LaneTenants().AddAsync(conn, null, withLanes, ct);
            withLanes.Remove(job.TenantId);
            var others = withLanes.ToList();
            var mine = fair.PassOf(job.TenantId);
            var turnFirst = isOverride ? 0 : others.Count(o => fair.PassOf(o) < mine || (fair.PassOf(o) == mine && o < job.TenantId));
            reasons = new AheadReasons(Sum(own, "smaller"), Sum(own, "older"), overrides.Jobs, turnFirst);
            itemsBefore = overrides.Items;
            sharedItems = own.Sum(r => r.Items) + job.Active;
            if (!isOverride && others.Count > 0)
            {
                // Weights are the tenants' settings; the claim path caches them the same way.
                var weights = (await conn.QueryAsync<(long Id, int Weight)>(Cmd(FairnessSql.TenantWeights, null, ct))).ToDictionary(r => r.Id, r => Math.Max(1, r.Weight));
                var w = weights.GetValueOrDefault(job.TenantId, 1);
                worstShare = (double)w / (w + others.Sum(o => weights.GetValueOrDefault(o, 1)));
            }
        }
        else
        {
            var rows = (await conn.QueryAsync<ReasonRow>(Cmd(FairnessSql.ExplainAhead, new { JobId = jobId, Now = now, Value = value, Cap = Cap }, ct))).AsList();
            if (rows.Sum(r => r.Jobs) > QueuePosition.ExactLimit)
            {
                exact = false;
                rows = await EstimateRestAsync(conn, OrderingSql.DiveLanesAhead, new { Value = value, JobId = jobId }, rows, lane, ct);
            }
            reasons = new AheadReasons(Sum(rows, "smaller"), Sum(rows, "older"), Sum(rows, "override"), 0);
            itemsBefore = rows.Sum(r => r.Items);
            sharedItems = job.Active;
        }
        var ahead = reasons.Smaller + reasons.Older + reasons.Override + reasons.AnotherTenantsTurn;
        EtaRange? eta = null;
        if (await throughput.ItemsPerSecondAsync(ct) is { } rate and > 0)
        {
            var earliest = (itemsBefore + sharedItems) / rate;
            var latest = (itemsBefore / rate) + (sharedItems / (rate * worstShare));
            if (policy != "tenant-fair")
            {
                // Under seed the job's place is fixed until the next rewrite; the range is the recent throughput's noise.
                (earliest, latest) = (earliest / 1.25, earliest * 1.25);
            }
            if (latest < TimeSpan.FromDays(3650).TotalSeconds)
            {
                eta = new EtaRange(now.AddSeconds(Math.Ceiling(earliest)), now.AddSeconds(Math.Ceiling(latest)), rate);
            }
        }
        return new JobExplanation(jobId, ahead + 1, exact, policy, mode, OrderingBand.Shown(value), isOverride, ov?.ExpiresAt, false, ahead, reasons, next, eta,
            Summarize(policy, mode, isOverride, reasons, next));
    }

    /// <summary>
    /// Past <see cref="QueuePosition.ExactLimit"/> jobs the walk stops (its cost must not grow with the queue): the rest
    /// is estimated by an index dive, counted under the job's own mode's reason, with the walked jobs' mean items.
    /// </summary>
    private static async Task<List<ReasonRow>> EstimateRestAsync(MySqlConnection conn, string dive, object args, List<ReasonRow> walked,
        JobLanesRow lane, CancellationToken ct)
    {
        var counted = walked.Sum(r => r.Jobs);
        var total = Math.Max(counted, await QueuePosition.DiveAsync(conn, dive, args, ct) / Math.Max(1, lane.Lanes));
        var rest = total - counted;
        var perJob = counted == 0 ? 0 : (double)walked.Sum(r => r.Items) / counted;
        var reason = lane.Mode == "smallest" ? "smaller" : "older";
        var rows = walked.Where(r => r.Reason != reason).ToList();
        var same = walked.FirstOrDefault(r => r.Reason == reason);
        rows.Add(new ReasonRow(reason, (same?.Jobs ?? 0) + rest, (same?.Items ?? 0) + (long)Math.Round(rest * perJob)));
        return rows;
    }

    private static long Sum(List<ReasonRow> rows, string reason) => rows.Where(r => r.Reason == reason).Sum(r => r.Jobs);

    private static string Summarize(string policy, string mode, bool isOverride, AheadReasons r, NextRewrite next)
    {
        var parts = new List<string>();
        if (r.Override > 0)
        {
            parts.Add($"{r.Override} with a technician's override");
        }
        if (r.Smaller > 0)
        {
            parts.Add($"{r.Smaller} smaller");
        }
        if (r.Older > 0)
        {
            parts.Add($"{r.Older} older");
        }
        if (r.AnotherTenantsTurn > 0)
        {
            parts.Add($"{r.AnotherTenantsTurn} of other tenants whose turn comes first");
        }
        var head = isOverride ? "A technician's override puts this job ahead of the normal order."
            : policy == "tenant-fair" ? $"Tenants take turns by weight; within yours, jobs go {(mode == "smallest" ? "smallest" : "oldest")} first."
            : $"Jobs go {(mode == "smallest" ? "smallest" : "oldest")} first.";
        var ahead = parts.Count == 0 ? " Nothing is ahead of it." : " Ahead of it: " + string.Join(", ", parts) + ".";
        return head + ahead + $" The order is rewritten {next.Mode}-first at {next.At:yyyy-MM-ddTHH:mm:ssZ}.";
    }

    /// <summary>The walks stop one past the exact limit, so "more than the limit" is known without counting further.</summary>
    private const int Cap = QueuePosition.ExactLimit + 1;

    private static CommandDefinition Cmd(string sql, object? args, CancellationToken ct) => new(sql, args, cancellationToken: ct);

    private sealed record JobRow(long Id, long TenantId, sbyte State, long Active);

    private sealed record OverrideRow(long Priority, DateTime ExpiresAt);

    private sealed record ReasonRow(string Reason, long Jobs, long Items);

    private sealed record CountRow(long Jobs, long Items);
}
