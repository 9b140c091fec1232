using System.Diagnostics;
using System.Globalization;
using HdrHistogram;
using Queue.Bench.Harness;

namespace Queue.Bench;

/// <summary>
/// The peers workload (docs/DESIGN.md "Peer speed") driven against Queue.Api: one-item jobs whose document is
/// <c>{"i": n, "pad": "x" * 1000}</c>, created with POST /jobs and drained with POST /next (max 1) and complete,
/// through <paramref name="via"/> (raw HTTP or Queue.Client).
/// </summary>
internal sealed class PeersWorkload(IPeersCalls via)
{
    /// <summary>Calls answered 503 and retried after Retry-After: a sign of overload worth printing.</summary>
    public long Retried503 => via.Retried503;

    /// <summary>
    /// Creates <paramref name="total"/> items in calls of <paramref name="perCall"/> documents (one job per call) from
    /// <paramref name="producers"/> concurrent loops, stopping at the count or at <paramref name="cap"/>.
    /// </summary>
    public async Task<EnqueueResult> EnqueueAsync(string task, long total, int perCall, int producers, TimeSpan cap, string? idempotencyPrefix)
    {
        var calls = (int)((total + perCall - 1) / perCall);
        var ends = new long[calls];
        var latencies = new long[calls];
        var ids = new long[calls];
        var histogram = Report.NewHistogram();
        long nextCall = -1, finished = -1, items = 0;
        var capped = false;
        var start = Stopwatch.GetTimestamp();
        var deadline = start + (long)(cap.TotalSeconds * Stopwatch.Frequency);
        await Task.WhenAll(Enumerable.Range(0, producers).Select(_ => Task.Run(async () =>
        {
            while (true)
            {
                if (Stopwatch.GetTimestamp() > deadline)
                {
                    capped = true;
                    return;
                }
                var call = Interlocked.Increment(ref nextCall);
                if (call >= calls)
                {
                    return;
                }
                var first = call * perCall;
                var count = (int)Math.Min(perCall, total - first);
                var t0 = Stopwatch.GetTimestamp();
                var id = await via.CreateJobAsync(task, first, count, idempotencyPrefix is null ? null : idempotencyPrefix + "-" + call.ToString(CultureInfo.InvariantCulture), deadline);
                var t1 = Stopwatch.GetTimestamp();
                Report.Record(histogram, t0);
                var k = Interlocked.Increment(ref finished);
                ends[k] = t1;
                latencies[k] = Math.Max(1, (long)Stopwatch.GetElapsedTime(t0, t1).TotalMicroseconds);
                ids[k] = id;
                Interlocked.Add(ref items, count);
            }
        })));
        var done = (int)(finished + 1);
        return new EnqueueResult(items, Stopwatch.GetElapsedTime(start).TotalSeconds, capped, histogram, start, ends[..done], latencies[..done], ids[..done]);
    }

    /// <summary>DELETE /jobs/{id}: takes a phase's items out of the queue, as the peers truncate between phases.</summary>
    public async Task CancelAsync(IEnumerable<long> jobIds)
    {
        foreach (var id in jobIds)
        {
            await via.CancelAsync(id);
        }
    }

    /// <summary>
    /// <paramref name="workers"/> loops of POST /next (max 1, wait 0) then complete, until every one of the
    /// <paramref name="queued"/> items was claimed or <paramref name="cap"/> passed. A 204 while items are still
    /// unclaimed is counted and retried after 5 ms, so a momentary empty answer does not end a worker early. With
    /// <paramref name="completionsInFlight"/> above 0, a worker claims its next item while its completions are still in
    /// flight, as long as fewer than that many are, counted over all the workers (graphile-worker's completeJob is
    /// fire-and-forget, bounded only by its pool of workers + 4 connections); the phase ends when every completion has
    /// been answered, and only answered completions count. With 0, each completion is answered before the next claim.
    /// </summary>
    public async Task<DrainResult> DrainAsync(string task, int workers, long queued, TimeSpan cap, int completionsInFlight)
    {
        var claims = Report.NewHistogram();
        var completes = Report.NewHistogram();
        long claimed = 0, completed = 0, emptyWhileQueued = 0;
        var start = Stopwatch.GetTimestamp();
        var deadline = start + (long)(cap.TotalSeconds * Stopwatch.Frequency);
        // With 0 each worker awaits its own completion, so up to one per worker is in flight: a bound of 1 here would
        // make the workers take turns at completing (16 workers draining as one).
        using var inFlight = new SemaphoreSlim(completionsInFlight > 0 ? completionsInFlight : Math.Max(1, workers));
        await Task.WhenAll(Enumerable.Range(0, workers).Select(w => Task.Run(async () =>
        {
            var claim = via.Claimer(w, task);
            var finishing = new List<Task>();
            async Task FinishAsync(Func<Task> complete)
            {
                try
                {
                    var t1 = Stopwatch.GetTimestamp();
                    await complete();
                    Report.Record(completes, t1);
                    Interlocked.Increment(ref completed);
                }
                finally
                {
                    inFlight.Release();
                }
            }
            while (Stopwatch.GetTimestamp() < deadline && Interlocked.Read(ref claimed) < queued)
            {
                var t0 = Stopwatch.GetTimestamp();
                var complete = await claim(deadline);
                Report.Record(claims, t0);
                if (complete is null)
                {
                    if (Interlocked.Read(ref claimed) >= queued)
                    {
                        // Every item is out; this worker's own completions may still be in flight, and count.
                        break;
                    }
                    Interlocked.Increment(ref emptyWhileQueued);
                    await Task.Delay(5);
                    continue;
                }
                Interlocked.Increment(ref claimed);
                await inFlight.WaitAsync();
                var finish = FinishAsync(complete);
                if (completionsInFlight == 0)
                {
                    await finish;
                    continue;
                }
                finishing.RemoveAll(t => t.IsCompletedSuccessfully);
                finishing.Add(finish);
            }
            await Task.WhenAll(finishing);
        })));
        var seconds = Stopwatch.GetElapsedTime(start).TotalSeconds;
        return new DrainResult(workers, queued, completed, seconds, completed < queued, claims, completes, emptyWhileQueued);
    }
}

/// <summary>An enqueue phase; per call, in order of completion: end timestamp, latency (µs) and the job's id.</summary>
internal sealed record EnqueueResult(long Items, double Seconds, bool Capped, HistogramBase Latency, long Start, long[] Ends, long[] Latencies, long[] JobIds)
{
    public double PerSecond => Items / Seconds;

    /// <summary>Rate (calls/s) and p50/p99 (ms) of the calls finishing <paramref name="from"/> to <paramref name="to"/> - 1:
    /// with nothing draining, the number of jobs queued while they ran.</summary>
    public (double Rate, double P50, double P99) Window(int from, int to)
    {
        var begin = from == 0 ? Start : Ends[from - 1];
        var seconds = Stopwatch.GetElapsedTime(begin, Ends[to - 1]).TotalSeconds;
        var sorted = Latencies[from..to];
        Array.Sort(sorted);
        double At(double p) => sorted[Math.Clamp((int)Math.Ceiling(p / 100 * sorted.Length) - 1, 0, sorted.Length - 1)] / 1000.0;
        return ((to - from) / Math.Max(seconds, 1e-6), At(50), At(99));
    }
}

internal sealed record DrainResult(int Workers, long Queued, long Completed, double Seconds, bool Capped, HistogramBase Claims, HistogramBase Completes, long EmptyWhileQueued)
{
    public double PerSecond => Completed / Seconds;
}
