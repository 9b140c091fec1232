namespace Queue.Core.Fairness;

/// <summary>Jain's index of one minute: received / entitled claims of every tenant that had ready work in it.</summary>
public sealed record MinuteFairness(DateTime Minute, double Jain, int Tenants, int Decisions);

/// <param name="Censored">The job had not finished when the trace ended: its turnaround is a lower bound (end - submitted).</param>
public sealed record JobTurnaround(long Tenant, long Job, long Items, DateTime Submitted, DateTime? Finished, TimeSpan Turnaround, double Stretch, bool Censored);

/// <param name="MaxItems">Inclusive upper bound of the bucket; <see cref="long.MaxValue"/> for the last one.</param>
public sealed record StretchBucket(string Name, long MaxItems, int Jobs, double P50, double P95);

/// <summary>A tenant's share of the claim decisions made while it and at least one other tenant had ready work.</summary>
/// <param name="WeightShare">What weighted fair sharing entitles it to over the same decisions: mean of w / sum(w of tenants with work).</param>
public sealed record ContendedShare(long Tenant, int Decisions, double Share, double WeightShare)
{
    /// <summary>Relative deviation from the weight share: 0.1 means 10% more than entitled.</summary>
    public double Deviation => WeightShare <= 0 ? 0 : (Share / WeightShare) - 1;
}

public sealed record FairnessReport(
    IReadOnlyList<MinuteFairness> Minutes,
    IReadOnlyList<JobTurnaround> Jobs,
    IReadOnlyList<StretchBucket> Stretch,
    IReadOnlyDictionary<long, TimeSpan> Starvation,
    IReadOnlyDictionary<long, ContendedShare> Shares)
{
    /// <summary>
    /// Per tenant: the longest time it had ready work and got no claim at all (any job). Unlike <see cref="Starvation"/>,
    /// a job waiting behind its own tenant's earlier jobs does not count: this is what other tenants can cause.
    /// </summary>
    public IReadOnlyDictionary<long, TimeSpan> TenantStarvation { get; init; } = new Dictionary<long, TimeSpan>();

    /// <summary>The lowest per-minute Jain's index, or null when no minute had a claim.</summary>
    public double? MinJain => Minutes.Count == 0 ? null : Minutes.Min(m => m.Jain);
}

/// <summary>
/// The fairness metrics, computed from a claim trace by pure functions so that tests can check them by hand and the
/// simulator, the Api's /metrics and the Admin dashboard all agree. Definitions (also in docs/DESIGN.md "Fairness"):
/// <list type="bullet">
/// <item>A job's ready count goes up on Submitted/Released, down on Claimed; a ReadySample sets it. A tenant "has ready
/// work" while any of its jobs' ready count is above 0.</item>
/// <item>Every claimed item is one decision. Its candidates are the tenants with ready work just before it (the
/// claiming tenant always included). At a decision tenant i is entitled to w_i / sum(w of candidates).</item>
/// <item>Jain's index of a minute (UTC, whole minutes) is (sum x)^2 / (n * sum x^2) over the n tenants entitled to
/// something in that minute, with x_i = claims received / claims entitled. 1 is perfectly weight-fair; 1/n is one
/// tenant taking everything.</item>
/// <item>Turnaround is from a job's first Submitted to the Completed that finishes its last item. Stretch is turnaround
/// divided by <see cref="ServiceModel.ServiceTime"/>: the time the job would take with the whole worker pool to itself.
/// A job still unfinished at the end counts with end - submitted (censored, a lower bound).</item>
/// <item>Starvation: the longest time any job of the tenant had ready items without a claim of that job: from the
/// moment it became ready (or its last claim, if ready items remained) to its next claim, or to the end.</item>
/// </list>
/// </summary>
public static class FairnessMetrics
{
    /// <summary>Upper bounds (items, inclusive) of the stretch buckets.</summary>
    public static readonly IReadOnlyList<(string Name, long Max)> Buckets =
    [
        ("1-10", 10), ("11-100", 100), ("101-1000", 1000), ("1001-10000", 10_000), (">10000", long.MaxValue),
    ];

    public static FairnessReport Analyze(IReadOnlyList<TraceEvent> events, ServiceModel service,
        IReadOnlyDictionary<long, int>? weights = null, DateTime? end = null)
    {
        var until = end ?? (events.Count == 0 ? DateTime.MinValue : events.Max(e => e.At));
        var jobs = new Dictionary<long, JobState>();
        var tenantReady = new Dictionary<long, long>();
        var starvation = new Dictionary<long, TimeSpan>();
        var minutes = new SortedDictionary<DateTime, MinuteAccumulator>();
        var shares = new Dictionary<long, ShareAccumulator>();
        var candidates = new List<long>();
        var tenantWaiting = new Dictionary<long, DateTime>();
        var tenantStarvation = new Dictionary<long, TimeSpan>();

        void TenantGap(long tenant, TimeSpan gap) =>
            tenantStarvation[tenant] = gap > tenantStarvation.GetValueOrDefault(tenant) ? gap : tenantStarvation.GetValueOrDefault(tenant);

        double Weight(long tenant) => weights is not null && weights.TryGetValue(tenant, out var w) && w > 0 ? w : 1;

        void SetReady(JobState job, long ready, DateTime at)
        {
            ready = Math.Max(0, ready);
            var before = tenantReady.GetValueOrDefault(job.Tenant);
            var after = before - job.Ready + ready;
            tenantReady[job.Tenant] = after;
            if (before <= 0 && after > 0)
            {
                tenantWaiting[job.Tenant] = at;
            }
            else if (before > 0 && after <= 0 && tenantWaiting.Remove(job.Tenant, out var waited))
            {
                TenantGap(job.Tenant, at - waited);
            }
            if (job.Ready == 0 && ready > 0)
            {
                job.WaitingSince = at;
            }
            else if (job.Ready > 0 && ready == 0 && job.WaitingSince is { } since)
            {
                Starved(job.Tenant, at - since);
                job.WaitingSince = null;
            }
            job.Ready = ready;
        }

        void Starved(long tenant, TimeSpan gap)
        {
            if (gap > starvation.GetValueOrDefault(tenant))
            {
                starvation[tenant] = gap;
            }
            else
            {
                starvation.TryAdd(tenant, TimeSpan.Zero);
            }
        }

        foreach (var e in events)
        {
            if (!jobs.TryGetValue(e.Job, out var job))
            {
                job = new JobState(e.Tenant);
                jobs[e.Job] = job;
            }
            switch (e.Kind)
            {
                case TraceKind.Submitted:
                    job.Submitted ??= e.At;
                    job.Items += e.Count;
                    job.Finished = null;
                    SetReady(job, job.Ready + e.Count, e.At);
                    break;
                case TraceKind.Released:
                    SetReady(job, job.Ready + e.Count, e.At);
                    break;
                case TraceKind.ReadySample:
                    SetReady(job, e.Count, e.At);
                    break;
                case TraceKind.Completed:
                    job.Done += e.Count;
                    if (job.Submitted is not null && job.Done >= job.Items && job.Finished is null)
                    {
                        job.Finished = e.At;
                    }
                    break;
                case TraceKind.Claimed:
                    var minute = new DateTime(e.At.Ticks - (e.At.Ticks % TimeSpan.TicksPerMinute), e.At.Kind);
                    if (!minutes.TryGetValue(minute, out var acc))
                    {
                        acc = new MinuteAccumulator();
                        minutes[minute] = acc;
                    }
                    // Decisions in a row for one job share their candidates until the claimant runs out of ready
                    // work, so they are counted in chunks: cost per event and candidate, not per item.
                    for (var left = e.Count; left > 0;)
                    {
                        var ownReady = tenantReady.GetValueOrDefault(e.Tenant);
                        var chunk = ownReady > 0 ? (int)Math.Min(left, ownReady) : left;
                        candidates.Clear();
                        foreach (var (tenant, ready) in tenantReady)
                        {
                            if (ready > 0)
                            {
                                candidates.Add(tenant);
                            }
                        }
                        if (!candidates.Contains(e.Tenant))
                        {
                            candidates.Add(e.Tenant); // a stale sample must not leave the claimant out
                        }
                        var total = candidates.Sum(Weight);
                        foreach (var c in candidates)
                        {
                            var entitled = Weight(c) / total * chunk;
                            acc.Entitled[c] = acc.Entitled.GetValueOrDefault(c) + entitled;
                            if (candidates.Count > 1)
                            {
                                if (!shares.TryGetValue(c, out var s))
                                {
                                    s = new ShareAccumulator();
                                    shares[c] = s;
                                }
                                s.Decisions += chunk;
                                s.Entitled += entitled;
                                if (c == e.Tenant)
                                {
                                    s.Received += chunk;
                                }
                            }
                        }
                        acc.Received[e.Tenant] = acc.Received.GetValueOrDefault(e.Tenant) + chunk;
                        acc.Decisions += chunk;
                        if (job.WaitingSince is { } since)
                        {
                            Starved(job.Tenant, e.At - since);
                        }
                        if (tenantWaiting.TryGetValue(job.Tenant, out var tSince))
                        {
                            TenantGap(job.Tenant, e.At - tSince);
                            tenantWaiting[job.Tenant] = e.At;
                        }
                        else
                        {
                            TenantGap(job.Tenant, TimeSpan.Zero);
                        }
                        job.WaitingSince = null;
                        SetReady(job, job.Ready - chunk, e.At);
                        if (job.Ready > 0)
                        {
                            job.WaitingSince = e.At;
                        }
                        left -= chunk;
                    }
                    break;
            }
        }
        foreach (var job in jobs.Values)
        {
            if (job.WaitingSince is { } since)
            {
                Starved(job.Tenant, until - since);
            }
        }
        foreach (var (tenant, since) in tenantWaiting)
        {
            TenantGap(tenant, until - since);
        }

        var minuteList = minutes.Where(m => m.Value.Decisions > 0).Select(m => new MinuteFairness(m.Key,
            Jain(m.Value.Entitled.Select(kv => m.Value.Received.GetValueOrDefault(kv.Key) / kv.Value)),
            m.Value.Entitled.Count, m.Value.Decisions)).ToList();

        var turnarounds = jobs.Where(kv => kv.Value.Submitted is not null).Select(kv =>
        {
            var j = kv.Value;
            var censored = j.Finished is null;
            var t = (j.Finished ?? until) - j.Submitted!.Value;
            if (t < TimeSpan.Zero)
            {
                t = TimeSpan.Zero;
            }
            return new JobTurnaround(j.Tenant, kv.Key, j.Items, j.Submitted.Value, j.Finished, t, t / service.ServiceTime(j.Items), censored);
        }).OrderBy(t => t.Job).ToList();

        var buckets = new List<StretchBucket>();
        long lower = 0;
        foreach (var (name, max) in Buckets)
        {
            var inBucket = turnarounds.Where(t => t.Items > lower && t.Items <= max).Select(t => t.Stretch).ToList();
            buckets.Add(new StretchBucket(name, max, inBucket.Count, Percentile(inBucket, 50), Percentile(inBucket, 95)));
            lower = max;
        }

        return new FairnessReport(minuteList, turnarounds, buckets, starvation,
            shares.ToDictionary(kv => kv.Key, kv => new ContendedShare(kv.Key, kv.Value.Decisions,
                (double)kv.Value.Received / kv.Value.Decisions, kv.Value.Entitled / kv.Value.Decisions)))
        {
            TenantStarvation = tenantStarvation,
        };
    }

    /// <summary>Jain's fairness index (sum x)^2 / (n * sum x^2); 1 for an empty or all-zero set.</summary>
    public static double Jain(IEnumerable<double> values)
    {
        double sum = 0, squares = 0;
        var n = 0;
        foreach (var x in values)
        {
            sum += x;
            squares += x * x;
            n++;
        }
        return n == 0 || squares == 0 ? 1 : sum * sum / (n * squares);
    }

    /// <summary>Nearest-rank percentile: the value at 1-based rank ceil(p/100 * n) of the sorted values; 0 when empty.</summary>
    public static double Percentile(IReadOnlyCollection<double> values, double p)
    {
        if (values.Count == 0)
        {
            return 0;
        }
        var sorted = values.Order().ToArray();
        var rank = (int)Math.Ceiling(p / 100 * sorted.Length);
        return sorted[Math.Clamp(rank, 1, sorted.Length) - 1];
    }

    public static TimeSpan Percentile(IReadOnlyCollection<TimeSpan> values, double p) =>
        TimeSpan.FromTicks((long)Percentile(values.Select(v => (double)v.Ticks).ToList(), p));

    private sealed class JobState(long tenant)
    {
        public long Tenant { get; } = tenant;

        public long Ready { get; set; }

        public long Items { get; set; }

        public long Done { get; set; }

        public DateTime? Submitted { get; set; }

        public DateTime? Finished { get; set; }

        public DateTime? WaitingSince { get; set; }
    }

    private sealed class MinuteAccumulator
    {
        public Dictionary<long, double> Entitled { get; } = [];

        public Dictionary<long, int> Received { get; } = [];

        public int Decisions { get; set; }
    }

    private sealed class ShareAccumulator
    {
        public int Decisions { get; set; }

        public int Received { get; set; }

        public double Entitled { get; set; }
    }
}
