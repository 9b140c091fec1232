using System.Globalization;
using Queue.Bench.Simulation;

namespace Queue.Bench.Soak;

/// <summary>
/// <c>soak --minutes N [--seed S] [--svg PATH]</c>: runs <see cref="SoakRun"/>, prints the reconciliation and the flatness
/// of memory, threads, connections and throughput as target lines, and plots them (SVG). Exit code 1 unless reconciled.
/// </summary>
public static class SoakCommand
{
    public static async Task<int> RunAsync(string[] args)
    {
        string? Arg(string name) => Array.IndexOf(args, name) is var i and >= 0 && i + 1 < args.Length ? args[i + 1] : null;
        var minutes = double.Parse(Arg("--minutes") ?? "1", CultureInfo.InvariantCulture);
        var seed = int.Parse(Arg("--seed") ?? Random.Shared.Next(1, 1_000_000).ToString(CultureInfo.InvariantCulture), CultureInfo.InvariantCulture);
        var svg = Arg("--svg") ?? Path.Combine(".queue", "soak.svg");
        Console.WriteLine($"soak: {minutes} min, seed {seed} (--seed {seed} repeats the mix)");
        var result = await new SoakRun(TimeSpan.FromMinutes(minutes), seed, Console.WriteLine).RunAsync();
        foreach (var e in result.Events)
        {
            Console.WriteLine("  " + e);
        }
        foreach (var line in Summary(result))
        {
            Console.WriteLine(line);
        }
        Directory.CreateDirectory(Path.GetDirectoryName(Path.GetFullPath(svg))!);
        await File.WriteAllTextAsync(svg, Plot(result));
        Console.WriteLine($"plot: {svg}");
        return result.Reconciled ? 0 : 1;
    }

    /// <summary>The reconciliation and the flatness targets, as the lines the soak prints.</summary>
    public static IEnumerable<string> Summary(SoakResult r)
    {
        yield return $"jobs acknowledged {r.Jobs:N0} ({r.UncertainJobs:N0} more whose answer a fault cut off, not counted); items {r.Submitted:N0} = done {r.Done:N0} + dead {r.Dead:N0} + cancelled {r.Cancelled:N0} + pending {r.Pending:N0}; duplicate completions {r.Duplicates}";
        yield return $"target soak-reconcile: {(r.Submitted == r.Done + r.Dead + r.Cancelled + r.Pending ? "exact" : "off by " + (r.Submitted - r.Done - r.Dead - r.Cancelled - r.Pending))}, {r.Duplicates} duplicates (goal exact, 0 duplicates): {(r.Reconciled ? "met" : "missed")}";
        var rss = Flatness(r.Samples, s => s.ApiRssMb);
        yield return $"target soak-api-rss-flat: {rss:F2}x last quarter vs first quarter (goal <= 1.5x): {(rss <= 1.5 ? "met" : "missed")}";
        var threads = Flatness(r.Samples, s => s.ApiThreads);
        yield return $"target soak-api-threads-flat: {threads:F2}x (goal <= 1.5x): {(threads <= 1.5 ? "met" : "missed")}";
    }

    private static double Flatness(IReadOnlyList<SoakSample> samples, Func<SoakSample, double> value)
    {
        var live = samples.Where(s => value(s) > 0).ToList();
        if (live.Count < 8)
        {
            return 1;
        }
        var quarter = live.Count / 4;
        return live.TakeLast(quarter).Average(value) / Math.Max(1e-9, live.Take(quarter).Average(value));
    }

    public static string Plot(SoakResult r)
    {
        IReadOnlyList<(double, double)> Of(Func<SoakSample, double> f) => r.Samples.Select(s => (s.Seconds, f(s))).ToList();
        return SvgPlot.Lines("Queue soak: memory, threads, connections, lock waits and throughput", "seconds", "value",
        [
            ("Api RSS (MB)", Of(s => s.ApiRssMb)),
            ("Api threads", Of(s => s.ApiThreads)),
            ("mariadbd RSS (MB / 4)", Of(s => s.DbRssMb / 4)),
            ("DB connections", Of(s => s.Connections)),
            ("row lock waits (total)", Of(s => s.LockWaits)),
            ("completions/s", Of(s => s.CompletedPerSecond)),
        ]);
    }
}
