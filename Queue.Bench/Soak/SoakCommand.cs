using System.Globalization;
using Queue.Bench.Simulation;

namespace Queue.Bench.Soak;

/// <summary>
/// <c>soak --minutes N [--seed S] [--faults] [--svg PATH]</c>: runs <see cref="SoakRun"/> (with <c>--faults</c>, the
/// Api's connections go through a fault proxy and <see cref="SoakChaos"/> injects faults at random), prints the
/// reconciliation and the flatness of memory, threads, connections and throughput as target lines, and plots them
/// (SVG). Exit code 1 unless reconciled.
/// </summary>
public static class SoakCommand
{
    public static async Task<int> RunAsync(string[] args)
    {
        string? Arg(string name) => Array.IndexOf(args, name) is var i and >= 0 && i + 1 < args.Length ? args[i + 1] : null;
        var minutes = double.Parse(Arg("--minutes") ?? "1", CultureInfo.InvariantCulture);
        var seed = int.Parse(Arg("--seed") ?? Random.Shared.Next(1, 1_000_000).ToString(CultureInfo.InvariantCulture), CultureInfo.InvariantCulture);
        var svg = Arg("--svg") ?? Path.Combine(".queue", "soak.svg");
        var faults = args.Contains("--faults");
        Console.WriteLine($"soak: {minutes} min, seed {seed} (--seed {seed} repeats the mix){(faults ? ", random faults" : "")}");
        var result = await new SoakRun(TimeSpan.FromMinutes(minutes), seed, Console.WriteLine, faults).RunAsync();
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
        var d = r.Duplicates;
        yield return $"jobs acknowledged {r.Jobs:N0}, {r.MissingJobs:N0} of them missing; {r.Unanswered:N0} creations or uploads without a definitive answer ({r.UnansweredLanded:N0} jobs of them landed, counted as the database shows them); items {r.Submitted:N0} = done {r.Done:N0} + dead {r.Dead:N0} + cancelled {r.Cancelled:N0} + pending {r.Pending:N0}";
        yield return $"duplicates: jobs {d.Jobs}, documents {d.Documents}, items {d.Items}, completions {d.Completions} (204s for a second lease token), completions in the database {d.CompletedInDatabase} (done counters past done items)";
        if (r.Faults.Count > 0)
        {
            yield return "faults: " + string.Join(", ", r.Faults.OrderBy(f => f.Key, StringComparer.Ordinal).Select(f => $"{f.Key} {f.Value}"));
        }
        var off = r.Submitted - r.Done - r.Dead - r.Cancelled - r.Pending;
        yield return $"target soak-reconcile: {(off == 0 ? "exact" : $"off by {off}")}, {d.Total} duplicates, {r.MissingJobs} missing (goal exact, 0 duplicates, 0 missing): {(r.Reconciled ? "met" : "missed")}";
        yield return $"target soak-definitive-answers: {r.Unanswered} without one (goal 0): {(r.Unanswered == 0 ? "met" : "missed")}";
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
