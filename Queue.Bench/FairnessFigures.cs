using System.Globalization;

namespace Queue.Bench;

/// <summary>A job as its submitter saw it; times are seconds since the run's origin, on the load generator's clock.</summary>
public readonly record struct FairJob(long JobId, string Tenant, int Items, double SentAt, double AnsweredAt);

/// <summary>One item handed out by a /next answer, at the time the answer arrived.</summary>
public readonly record struct FairClaim(long ItemId, long JobId, string Tenant, double At);

/// <summary>One completion answered 204.</summary>
public readonly record struct FairCompletion(long ItemId, long JobId, double At);

/// <summary>
/// The <c>fairness</c> bench's figures, computed from what the workers and submitters saw over HTTP (black box).
/// "Unclaimed" (a tenant "has work ready") is counted from the client's side: items submitted and not yet handed out
/// by any /next answer. Items a process claimed ahead into memory are still unclaimed here, because no worker has them.
/// </summary>
public static class FairnessFigures
{
    /// <summary>
    /// A job's items count as unclaimed from its 201, or from its first handout when a worker's answer came back
    /// before the submitter's (the job was committed before either answer left the service).
    /// </summary>
    public static double ReadyAt(FairJob job, IReadOnlyList<FairClaim> claims)
    {
        var first = job.AnsweredAt;
        foreach (var c in claims)
        {
            if (c.JobId == job.JobId && c.At < first)
            {
                first = c.At;
            }
        }
        return first;
    }

    /// <summary>The first handout of each item; later ones are duplicates and hand out nothing new.</summary>
    public static List<FairClaim> FirstHandouts(IReadOnlyList<FairClaim> claims)
    {
        var seen = new HashSet<long>();
        return claims.OrderBy(c => c.At).Where(c => seen.Add(c.ItemId)).ToList();
    }

    /// <summary>
    /// Handouts beyond an item's first. Leases are 300 s, longer than the whole run, and every worker completes what
    /// it gets, so a second handout of an item id came while a lease was live or after the item was done: both count.
    /// </summary>
    public static int Duplicates(IReadOnlyList<FairClaim> claims) => claims.Count - claims.Select(c => c.ItemId).Distinct().Count();

    /// <summary>Items submitted and never completed (per job: its item count minus its distinct items answered 204).</summary>
    public static long Lost(IReadOnlyList<FairJob> jobs, IReadOnlyList<FairCompletion> completions)
    {
        var done = completions.GroupBy(c => c.JobId).ToDictionary(g => g.Key, g => g.Select(c => c.ItemId).Distinct().Count());
        return jobs.Sum(j => (long)Math.Max(0, j.Items - done.GetValueOrDefault(j.JobId)));
    }

    /// <summary>
    /// The disjoint, ordered intervals (From, To] during which <paramref name="tenant"/> had at least one unclaimed
    /// item: +items at each job's <see cref="ReadyAt"/>, -1 at each first handout.
    /// </summary>
    public static List<(double From, double To)> ReadyIntervals(string tenant, IReadOnlyList<FairJob> jobs, IReadOnlyList<FairClaim> firstHandouts)
    {
        var steps = jobs.Where(j => j.Tenant == tenant)
            .Select(j => (At: ReadyAt(j, firstHandouts), Delta: j.Items))
            .Concat(firstHandouts.Where(c => c.Tenant == tenant).Select(c => (c.At, Delta: -1)))
            // At the same instant arrivals first, so an item handed out the moment it is known was ready for it.
            .OrderBy(s => s.At).ThenByDescending(s => s.Delta);
        var intervals = new List<(double, double)>();
        long unclaimed = 0;
        double from = 0;
        foreach (var (at, delta) in steps)
        {
            if (delta > 0)
            {
                from = unclaimed == 0 ? at : from;
                unclaimed += delta;
            }
            else if (unclaimed > 0 && --unclaimed == 0)
            {
                intervals.Add((from, at));
            }
        }
        if (unclaimed > 0)
        {
            intervals.Add((from, double.PositiveInfinity));
        }
        return intervals;
    }

    /// <summary>Whether <paramref name="at"/> lies in one of <paramref name="intervals"/> (From &lt;= at &lt;= To).</summary>
    public static bool Within(List<(double From, double To)> intervals, double at)
    {
        var lo = 0;
        var hi = intervals.Count - 1;
        while (lo <= hi)
        {
            var mid = (lo + hi) / 2;
            if (at < intervals[mid].From)
            {
                hi = mid - 1;
            }
            else if (at > intervals[mid].To)
            {
                lo = mid + 1;
            }
            else
            {
                return true;
            }
        }
        return false;
    }

    /// <summary>
    /// The flood tenant's share of the handouts made while the small tenant had at least one unclaimed item:
    /// flood handouts / all handouts in those intervals (the small tenant's own included). NaN when there were none.
    /// </summary>
    public static (double Share, int Flood, int All) ShareWhileWaiting(string flood, string small, IReadOnlyList<FairJob> jobs, IReadOnlyList<FairClaim> claims)
    {
        var handouts = FirstHandouts(claims);
        var waiting = ReadyIntervals(small, jobs, handouts);
        var during = handouts.Where(c => Within(waiting, c.At)).ToList();
        var mine = during.Count(c => c.Tenant == flood);
        return (during.Count == 0 ? double.NaN : (double)mine / during.Count, mine, during.Count);
    }

    /// <summary>
    /// Jain's index per window of <paramref name="window"/> seconds, over the tenants given: in each window, only the
    /// handouts made while every one of them had unclaimed work count (the part of the window in which all were
    /// backlogged; a tenant whose demand is below its share cannot be backlogged for a whole window).
    /// x_t = handouts_t / weight_t, J = (sum x)^2 / (n * sum x^2): 1 when the shares follow the weights, 1/n when one
    /// tenant took everything. Windows with fewer than <paramref name="minClaims"/> such handouts say nothing and are skipped.
    /// </summary>
    public static List<(double Start, double Jain, int Claims, string Split)> JainPerWindow(IReadOnlyDictionary<string, double> weights, IReadOnlyList<FairJob> jobs,
        IReadOnlyList<FairClaim> claims, double window = 1.0, int minClaims = 10)
    {
        var handouts = FirstHandouts(claims);
        var ready = weights.Keys.ToDictionary(t => t, t => ReadyIntervals(t, jobs, handouts), StringComparer.Ordinal);
        var backlogged = handouts.Where(c => weights.ContainsKey(c.Tenant) && ready.Values.All(r => Within(r, c.At)));
        var result = new List<(double, double, int, string)>();
        foreach (var w in backlogged.GroupBy(c => Math.Floor(c.At / window)).OrderBy(g => g.Key))
        {
            var n = w.Count();
            if (n < minClaims)
            {
                continue;
            }
            var x = weights.Select(t => w.Count(c => c.Tenant == t.Key) / t.Value).ToArray();
            var sum = x.Sum();
            // Who got the window's handouts, and when the first and last of them came: a window under 0.9 says which way.
            var split = string.Join(", ", weights.Keys.Select(t => $"{t} {w.Count(c => c.Tenant == t)}")) +
                string.Create(CultureInfo.InvariantCulture, $" between {w.Min(c => c.At):F3} and {w.Max(c => c.At):F3} s");
            result.Add((w.Key * window, sum * sum / (x.Length * x.Sum(v => v * v)), n, split));
        }
        return result;
    }

    /// <summary>
    /// Turnaround per job of <paramref name="tenant"/>, seconds: sent to the 204 of its last item. A job not fully
    /// completed by <paramref name="end"/> counts with end - sent (censored), so a starved job is never left out.
    /// </summary>
    public static List<double> Turnarounds(string tenant, IReadOnlyList<FairJob> jobs, IReadOnlyList<FairCompletion> completions, double end)
    {
        var byJob = completions.GroupBy(c => c.JobId).ToDictionary(g => g.Key, g => (Distinct: g.Select(c => c.ItemId).Distinct().Count(), Last: g.Max(c => c.At)));
        return jobs.Where(j => j.Tenant == tenant)
            .Select(j => (byJob.TryGetValue(j.JobId, out var d) && d.Distinct >= j.Items ? d.Last : end) - j.SentAt)
            .ToList();
    }

    /// <summary>
    /// Where each completed job of <paramref name="tenant"/> spent its turnaround, seconds: sent to 201, sent to its
    /// first handout, first to last handout, last handout to last 204. Says whether a long turnaround waited for a
    /// claim, for its share of the workers, or for its completions.
    /// </summary>
    public static List<(double SentAt, double Submit, double FirstHandout, double Handouts, double Completion)> TurnaroundParts(string tenant, IReadOnlyList<FairJob> jobs,
        IReadOnlyList<FairClaim> claims, IReadOnlyList<FairCompletion> completions)
    {
        var handouts = FirstHandouts(claims).GroupBy(c => c.JobId).ToDictionary(g => g.Key, g => (First: g.Min(c => c.At), Last: g.Max(c => c.At), Count: g.Count()));
        var done = completions.GroupBy(c => c.JobId).ToDictionary(g => g.Key, g => g.Max(c => c.At));
        return jobs.Where(j => j.Tenant == tenant && handouts.TryGetValue(j.JobId, out var h) && h.Count >= j.Items && done.ContainsKey(j.JobId))
            .Select(j => (j.SentAt, j.AnsweredAt - j.SentAt, handouts[j.JobId].First - j.SentAt, handouts[j.JobId].Last - handouts[j.JobId].First, done[j.JobId] - handouts[j.JobId].Last))
            .ToList();
    }

    /// <summary>Nearest-rank percentile; NaN for no values.</summary>
    public static double Percentile(IEnumerable<double> values, double p)
    {
        var sorted = values.Order().ToArray();
        return sorted.Length == 0 ? double.NaN : sorted[Math.Clamp((int)Math.Ceiling(p / 100 * sorted.Length) - 1, 0, sorted.Length - 1)];
    }

    /// <summary>A tenant's drain rate: its items / (its first handout to its last completion), items/s.</summary>
    public static (double PerSecond, long Items, double Seconds) Drain(string tenant, IReadOnlyList<FairJob> jobs, IReadOnlyList<FairClaim> claims,
        IReadOnlyList<FairCompletion> completions)
    {
        var ids = jobs.Where(j => j.Tenant == tenant).Select(j => j.JobId).ToHashSet();
        var items = jobs.Where(j => j.Tenant == tenant).Sum(j => (long)j.Items);
        var first = claims.Where(c => c.Tenant == tenant).Select(c => c.At).DefaultIfEmpty(double.NaN).Min();
        var last = completions.Where(c => ids.Contains(c.JobId)).Select(c => c.At).DefaultIfEmpty(double.NaN).Max();
        var seconds = last - first;
        return (items / seconds, items, seconds);
    }
}
