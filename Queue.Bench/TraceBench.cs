using System.Diagnostics;
using System.Globalization;
using MySqlConnector;
using Queue.Bench.Harness;
using Queue.Core.Claims;
using Queue.Core.Fairness;

namespace Queue.Bench;

/// <summary>
/// <c>trace</c>: the cost of recording one claim in the Api's fairness trace (<see cref="FairnessMonitor.Claimed"/>,
/// called under the monitor's lock by every <c>/next</c> that hands out work) below and at the trace's cap. A process
/// that hands out 2,000 items/s reaches the cap (<see cref="FairnessMonitor.MaxEvents"/>) in about four minutes, longer
/// than any drain of the other benchmarks, so they never see it. In process: no database is opened.
/// </summary>
public static class TraceBench
{
    public static Task<int> RunAsync(string[] args)
    {
        var perPhase = int.Parse(BenchArgs.Option(args, "--claims") ?? "400000", CultureInfo.InvariantCulture);
        // Never opened: recording a claim touches memory only.
        using var db = new MySqlDataSource("Server=127.0.0.1;Port=1");
        var monitor = new FairnessMonitor(db, TimeProvider.System);
        var report = new Report();
        var rss0 = Process.GetCurrentProcess().WorkingSet64;
        Console.WriteLine($"trace: one-item claims of distinct jobs, {perPhase:N0} to fill, then up to the cap of {FairnessMonitor.MaxEvents:N0} events, then {perPhase:N0} past it");

        var below = Phase(monitor, 0, perPhase);
        Row("claims below the cap", below);
        Phase(monitor, perPhase, FairnessMonitor.MaxEvents - monitor.TracedEvents); // up to the cap, not reported
        var atCap = Phase(monitor, FairnessMonitor.MaxEvents, perPhase);
        Row("claims at the cap (oldest folded)", atCap);
        // RSS also holds this loop's garbage and the claimed-since-sample set (no sample runs here); the heap after a full
        // collection is what the trace and its baseline keep.
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"events held {monitor.TracedEvents:N0}; RSS {rss0 / 1048576.0:F0} MB before, {atCap.Rss / 1048576.0:F0} MB at the cap; managed heap after a full collection {GC.GetTotalMemory(forceFullCollection: true) / 1048576.0:F0} MB"));

        // What the monitor computes once a minute off the lock, over a window as large as the cap: the same metrics
        // over the same number of one-item claims, spread over 50 tenants and 15 minutes.
        var start = DateTime.UtcNow - FairnessMonitor.Window;
        var window = new TraceEvent[FairnessMonitor.MaxEvents];
        for (var i = 0; i < window.Length; i++)
        {
            window[i] = new TraceEvent(start + (FairnessMonitor.Window * i / window.Length), TraceKind.Claimed, i % 50, i, 1);
        }
        var analyze = Stopwatch.StartNew();
        FairnessMetrics.Analyze(window, new ServiceModel(1, TimeSpan.FromSeconds(1)), end: DateTime.UtcNow);
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"the minute's metrics over {window.Length:N0} events: {analyze.Elapsed.TotalMilliseconds:F0} ms (off the lock)"));

        var (p99Below, p99Cap) = (Micros(below.Latency, 99), Micros(atCap.Latency, 99));
        report.Target("trace-claim-p99-at-cap", string.Create(CultureInfo.InvariantCulture,
            $"{p99Cap:F1} us vs {p99Below:F1} us below the cap, {p99Cap / p99Below:F2}x"), "<= 2.0x", p99Cap <= 2.0 * p99Below);
        return Task.FromResult(report.Finish());
    }

    private static (double PerSecond, HdrHistogram.LongConcurrentHistogram Latency, long Rss) Phase(FairnessMonitor monitor, long firstJob, int claims)
    {
        var latency = Report.NewHistogram();
        var items = new TakenItem[1];
        var watch = Stopwatch.StartNew();
        for (var i = 0; i < claims; i++)
        {
            items[0] = Item(firstJob + i);
            var start = Stopwatch.GetTimestamp();
            monitor.Claimed(items);
            latency.RecordValue(Math.Max(1, (long)Stopwatch.GetElapsedTime(start).TotalNanoseconds));
        }
        return (claims / watch.Elapsed.TotalSeconds, latency, Process.GetCurrentProcess().WorkingSet64);
    }

    /// <summary>Nanoseconds recorded (a claim's record takes well under a microsecond), read as microseconds.</summary>
    private static double Micros(HdrHistogram.HistogramBase h, double percentile) => h.GetValueAtPercentile(percentile) / 1000.0;

    private static void Row(string name, (double PerSecond, HdrHistogram.LongConcurrentHistogram Latency, long Rss) phase) =>
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"{name,-44} {phase.PerSecond,12:N0} claims/s p50 {Micros(phase.Latency, 50),8:F2} us  p99 {Micros(phase.Latency, 99),8:F2} us  RSS {phase.Rss / 1048576.0,7:F0} MB"));

    private static TakenItem Item(long job) => new(job, job, job % 50, job, "t", 1, [], DateTime.UtcNow, false);
}
