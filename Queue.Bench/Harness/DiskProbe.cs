using System.Diagnostics;
using System.Globalization;
using HdrHistogram;

namespace Queue.Bench.Harness;

/// <summary>
/// The disk's own flush latency while a phase runs: a 512-byte write and an fsync every 20 ms, in the database's
/// directory (the file system of its redo log). Every durable commit waits for such a flush, so no commit-bound p99 can
/// be better than the disk's flushes during the same seconds: this is that raw limit, printed beside the figures it
/// bounds (docs/DESIGN.md "Commit latency is the disk's").
/// </summary>
/// <remarks>
/// One flush every 20 ms adds about 50 small flushes per second to the thousands of commits a phase makes. The loop runs
/// on a thread of its own, outside the pool the load uses, since fsync blocks.
/// </remarks>
public sealed class DiskProbe : IAsyncDisposable
{
    private const int IntervalMilliseconds = 20;
    private const int StallMilliseconds = 20;

    /// <summary>What each figure of <see cref="StopAsync"/> and <see cref="Cut"/> measures.</summary>
    public static readonly string What = $"512 B written and fsynced every {IntervalMilliseconds} ms";

    /// <summary>The one form every benchmark prints a probe's figures in: <c>disk flush (WHAT) WHERE: FIGURES</c>.</summary>
    public static string Line(string where, string figures) => $"disk flush ({What}) {where}: {figures}";

    private readonly CancellationTokenSource stop = new();
    private readonly Lock gate = new();
    private readonly string path;
    private readonly Thread thread;
    private readonly Span whole = new();
    private Span segment = new();
    private string? final;

    public DiskProbe(string directory)
    {
        path = Path.Combine(directory, $"disk-probe-{Environment.ProcessId}-{Guid.NewGuid():N}.dat");
        thread = new Thread(Run) { IsBackground = true, Name = "disk probe" };
        thread.Start();
    }

    private void Run()
    {
        using var file = new FileStream(path, FileMode.Create, FileAccess.Write, FileShare.None, bufferSize: 0);
        var block = new byte[512];
        while (!stop.IsCancellationRequested)
        {
            file.Position = 0;
            file.Write(block);
            var start = Stopwatch.GetTimestamp();
            file.Flush(flushToDisk: true);
            var us = Math.Max(1, (long)Stopwatch.GetElapsedTime(start).TotalMicroseconds);
            lock (gate)
            {
                whole.Record(us);
                segment.Record(us);
            }
            stop.Token.WaitHandle.WaitOne(IntervalMilliseconds);
        }
    }

    /// <summary>The flushes measured since the last cut (or the start): something to wait for instead of sleeping.</summary>
    public long FlushesSinceCut
    {
        get
        {
            lock (gate)
            {
                return segment.Count;
            }
        }
    }

    /// <summary>
    /// The flushes since the probe started or since the last cut, and a new segment from here: for a run whose phases
    /// are only known as they end (graphile-worker's script).
    /// </summary>
    public string Cut()
    {
        lock (gate)
        {
            var summary = segment.Summary();
            segment = new Span();
            return summary;
        }
    }

    /// <summary>
    /// Stops the probe and returns one line for its whole run: the flushes' percentiles, and the share of the run the
    /// probe spent in flushes over 20 ms (a lower bound of the time the disk held every commit).
    /// </summary>
    public async Task<string> StopAsync()
    {
        if (final is null)
        {
            await stop.CancelAsync();
            await Task.Run(thread.Join);
            lock (gate)
            {
                final = whole.Summary();
            }
        }
        return final;
    }

    public async ValueTask DisposeAsync()
    {
        await StopAsync();
        stop.Dispose();
        File.Delete(path);
    }

    private sealed class Span
    {
        private readonly LongHistogram latency = new(1, 60_000_000, 3);
        private readonly long started = Stopwatch.GetTimestamp();
        private long stalledMicroseconds;

        public long Count => latency.TotalCount;

        public void Record(long us)
        {
            latency.RecordValue(us);
            if (us > StallMilliseconds * 1000)
            {
                stalledMicroseconds += us;
            }
        }

        public string Summary()
        {
            var seconds = Stopwatch.GetElapsedTime(started).TotalSeconds;
            var stalled = stalledMicroseconds / 1e6;
            return string.Create(CultureInfo.InvariantCulture,
                $"p50 {Report.P(latency, 50):F2} ms  p99 {Report.P(latency, 99):F2} ms  p99.9 {Report.P(latency, 99.9):F1} ms  max {latency.GetMaxValue() / 1000.0:F0} ms; over {StallMilliseconds} ms for {stalled:F2} s of {seconds:F0} s ({100 * stalled / Math.Max(seconds, 1e-9):F1} %)");
        }
    }
}
