using System.Diagnostics;
using System.Globalization;
using HdrHistogram;

namespace Queue.Bench.Harness;

/// <summary>Latency recording and the one-line-per-target verdicts every scenario ends with.</summary>
public sealed class Report
{
    private readonly List<string> targets = [];

    /// <summary>
    /// A thread-safe latency recorder; values in microseconds up to an hour. A value past the top throws, and at 60 s a
    /// rewrite of 1M jobs built twice under claims (98 s) ended the rewrite bench's rewrite loop with it.
    /// </summary>
    public static LongConcurrentHistogram NewHistogram() => new(1, 3_600_000_000, 3);

    public static void Record(LongConcurrentHistogram h, long startTimestamp) =>
        h.RecordValue(Math.Max(1, (long)Stopwatch.GetElapsedTime(startTimestamp).TotalMicroseconds));

    public static double P(HistogramBase h, double percentile) => h.GetValueAtPercentile(percentile) / 1000.0;

    /// <summary>Prints one result row: throughput, p50, p99 (ms) and RSS (MB).</summary>
    public static void Row(string name, double perSecond, HistogramBase latency, long rssBytes, string unit = "req/s")
    {
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"{name,-44} {perSecond,12:N0} {unit,-8} p50 {P(latency, 50),8:F2} ms  p99 {P(latency, 99),8:F2} ms  RSS {rssBytes / 1048576.0,7:F0} MB"));
    }

    /// <summary>The same row from latencies measured elsewhere (wrk).</summary>
    public static void Row(string name, double perSecond, double p50Ms, double p99Ms, long rssBytes, string unit = "req/s")
    {
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"{name,-44} {perSecond,12:N0} {unit,-8} p50 {p50Ms,8:F2} ms  p99 {p99Ms,8:F2} ms  RSS {rssBytes / 1048576.0,7:F0} MB"));
    }

    /// <summary>Records a verdict: <c>target NAME: MEASURED (goal GOAL): met</c> or <c>: missed</c>.</summary>
    public void Target(string name, string measured, string goal, bool met) =>
        targets.Add($"target {name}: {measured} (goal {goal}): {(met ? "met" : "missed")}");

    /// <summary>A goal beyond the floor, in the same form (<c>stretch NAME: ...</c>); it never fails the run.</summary>
    public void Stretch(string name, string measured, string goal, bool met) =>
        targets.Add($"stretch {name}: {measured} (goal {goal}): {(met ? "met" : "missed")}");

    /// <summary>Prints every verdict at the end of the run; returns 0 when every target (not stretch) was met.</summary>
    public int Finish()
    {
        Console.WriteLine();
        foreach (var t in targets)
        {
            Console.WriteLine(t);
        }
        return targets.Where(t => t.StartsWith("target ", StringComparison.Ordinal)).All(t => t.EndsWith(": met", StringComparison.Ordinal)) ? 0 : 1;
    }
}

/// <summary>Samples a process's RSS in the background and keeps the peak.</summary>
public sealed class RssSampler : IAsyncDisposable
{
    private readonly CancellationTokenSource stop = new();
    private readonly Task loop;

    public RssSampler(Func<long> read)
    {
        loop = Task.Run(async () =>
        {
            while (!stop.IsCancellationRequested)
            {
                try
                {
                    Peak = Math.Max(Peak, read());
                    await Task.Delay(100, stop.Token);
                }
                catch (OperationCanceledException)
                {
                }
                catch (IOException)
                {
                }
            }
        });
    }

    public long Peak { get; private set; }

    public async ValueTask DisposeAsync()
    {
        await stop.CancelAsync();
        await loop;
        stop.Dispose();
    }
}
