using System.Globalization;
using Dapper;
using MySqlConnector;
using Queue.Bench.Harness;
using Queue.Core.Fairness;

namespace Queue.Bench.Simulation;

/// <summary>
/// <c>simulate --scenario noisy-neighbour|split-flood|quiet-day --policy seed|fifo|tenant-fair [--out DIR]</c>: runs the
/// scenario (and, when it has a flooding tenant, the same scenario without it as the solo baseline), prints the fairness
/// table and the target lines, and writes an SVG of each tenant's completed items over time.
/// </summary>
public static class SimulateCommand
{
    private static readonly string[] Policies = ["seed", "fifo", "tenant-fair"];

    public static async Task<int> RunAsync(string[] args)
    {
        string? scenarioName = null, policy = null;
        var outDir = "sim-out";
        for (var i = 0; i + 1 < args.Length; i += 2)
        {
            switch (args[i])
            {
                case "--scenario": scenarioName = args[i + 1]; break;
                case "--policy": policy = args[i + 1]; break;
                case "--out": outDir = args[i + 1]; break;
                default: break;
            }
        }
        var scenario = scenarioName is null ? null : Scenario.Create(scenarioName);
        if (scenario is null || policy is null || !Policies.Contains(policy))
        {
            await Console.Error.WriteLineAsync($"usage: simulate --scenario {string.Join('|', Scenario.Names)} --policy {string.Join('|', Policies)} [--out DIR]");
            return 64;
        }
        Console.WriteLine($"simulate {scenario.Name}, policy {policy}: {scenario.Description}");
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"scaled to run in minutes: items / {Scenario.Scale}, {scenario.Workers} workers x {scenario.ItemTime.TotalSeconds:0} s per item, ordering period {scenario.Period.TotalMinutes:0} min (modes alternate), {scenario.Duration.TotalMinutes:0} simulated min"));

        await using var env = await BenchEnvironment.StartAsync("2G");
        await using (var conn = new MySqlConnection(env.Server.ServerConnectionString))
        {
            // A simulation needs no durability: commit without waiting for the disk.
            await conn.ExecuteAsync("SET GLOBAL innodb_flush_log_at_trx_commit = 2");
        }
        SimResult? baseline = null;
        if (scenario.Flooder is not null)
        {
            var cs = await env.Server.CreateDatabaseAsync("sim_solo");
            await Queue.Core.Data.Migrations.ApplyAsync(cs, Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance);
            baseline = await new Simulation(scenario.WithoutFlooder(), policy, cs).RunAsync(CancellationToken.None);
        }
        var full = await new Simulation(scenario, policy, env.ConnectionString).RunAsync(CancellationToken.None);

        var report = new Report();
        var fullMetrics = Analyze(full);
        var rows = new List<(string Name, SimResult Run, FairnessReport Metrics)>();
        if (baseline is not null)
        {
            rows.Add(("solo (no " + scenario.Flooder + ")", baseline, Analyze(baseline)));
        }
        rows.Add(("full", full, fullMetrics));
        PrintTable(scenario, policy, rows);

        Directory.CreateDirectory(outDir);
        var svg = Path.Combine(outDir, $"{scenario.Name}-{policy}.svg");
        await File.WriteAllTextAsync(svg, SvgPlot.Lines($"{scenario.Name}, {policy}: completed items per tenant", "simulated minutes", "items completed",
            scenario.Tenants.Select(t => (t, (IReadOnlyList<(double, double)>)full.Timeline.Select(p => (p.Minute, (double)p.Completed[t])).ToList())).ToList()));
        Console.WriteLine($"plot: {Path.GetFullPath(svg)}");

        // The fairness goals (docs/DESIGN.md "Fairness"), checked for every policy so the table shows what each costs.
        if (baseline is not null)
        {
            var solo = SmallP95(baseline, Analyze(baseline));
            var with = SmallP95(full, fullMetrics);
            var ratio = solo.TotalSeconds > 0 ? with.TotalSeconds / solo.TotalSeconds : double.PositiveInfinity;
            report.Target("small-jobs-turnaround-p95-vs-solo", Inv($"{ratio:0.00}x ({with.TotalSeconds:0} s vs {solo.TotalSeconds:0} s solo)"), "<= 2x", ratio <= 2);
            var flooder = full.TenantNames.First(kv => kv.Value == scenario.Flooder).Key;
            if (fullMetrics.Shares.TryGetValue(flooder, out var share))
            {
                report.Target($"{scenario.Flooder}-share-while-others-wait", Inv($"{share.Share:P1} vs weight share {share.WeightShare:P1} ({share.Deviation:+0.0%;-0.0%})"),
                    "within 10%", Math.Abs(share.Deviation) <= 0.10);
            }
        }
        var minJain = fullMetrics.MinJain ?? 1;
        var worstMinute = fullMetrics.Minutes.OrderBy(m => m.Jain).FirstOrDefault();
        report.Target("jain-every-minute", Inv($"min {minJain:0.000}") + (worstMinute is null ? "" : Inv($" at minute {(worstMinute.Minute - full.Start).TotalMinutes:0} ({full.Calendar.At(worstMinute.Minute).ModeName})")),
            ">= 0.9", minJain >= 0.9);
        var worst = fullMetrics.Starvation.OrderByDescending(kv => kv.Value).FirstOrDefault();
        report.Target("starvation-max", Inv($"{worst.Value.TotalSeconds:0} s, a job of {full.TenantNames.GetValueOrDefault(worst.Key, "-")}"),
            Inv($"<= one period, {scenario.Period.TotalSeconds:0} s"), worst.Value <= scenario.Period);
        var worstTenant = fullMetrics.TenantStarvation.OrderByDescending(kv => kv.Value).FirstOrDefault();
        report.Target("tenant-starvation-max", Inv($"{worstTenant.Value.TotalSeconds:0} s ({full.TenantNames.GetValueOrDefault(worstTenant.Key, "-")} had ready work and no claim at all)"),
            Inv($"<= one period, {scenario.Period.TotalSeconds:0} s"), worstTenant.Value <= scenario.Period);
        var code = report.Finish();
        Console.WriteLine(Inv($"simulated {scenario.Duration.TotalMinutes:0} min with {full.Claims:N0} claims in {full.Wall.TotalSeconds:0} s wall") +
            (baseline is null ? "" : Inv($" (+ solo baseline in {baseline.Wall.TotalSeconds:0} s)")));
        return code;
    }

    private static FairnessReport Analyze(SimResult r) =>
        FairnessMetrics.Analyze(r.Trace, new ServiceModel(r.Scenario.Workers, r.Scenario.ItemTime),
            r.TenantNames.ToDictionary(kv => kv.Key, kv => r.Weights.GetValueOrDefault(kv.Value, 1)), r.End);

    /// <summary>p95 turnaround of the jobs of every tenant but the flooder (all jobs when there is none).</summary>
    private static TimeSpan SmallP95(SimResult r, FairnessReport m) =>
        FairnessMetrics.Percentile(m.Jobs.Where(j => r.TenantNames[j.Tenant] != r.Scenario.Flooder).Select(j => j.Turnaround).ToList(), 95);

    private static void PrintTable(Scenario scenario, string policy, List<(string Name, SimResult Run, FairnessReport Metrics)> rows)
    {
        Console.WriteLine();
        Console.WriteLine(Inv($"{"policy",-12} {"run",-12} {"small p50",10} {"small p95",10} {"unfinished",10} {"Jain min",9} {"min smallest",12} {"min oldest",10} {"Jain mean",9} {"job starve",10} {"tenant starve",13} {"flood share",14}  stretch p50/p95 by items"));
        foreach (var (name, run, m) in rows)
        {
            var small = m.Jobs.Where(j => run.TenantNames[j.Tenant] != scenario.Flooder).ToList();
            var turn = small.Select(j => j.Turnaround).ToList();
            var byMode = m.Minutes.GroupBy(x => run.Calendar.At(x.Minute).ModeName).ToDictionary(g => g.Key, g => g.Min(x => x.Jain));
            var flood = scenario.Flooder is null ? "-" : run.TenantNames.Where(kv => kv.Value == scenario.Flooder).Select(kv => kv.Key)
                .Select(id => m.Shares.TryGetValue(id, out var s) ? Inv($"{s.Share:P0}/{s.WeightShare:P0}") : "-").FirstOrDefault() ?? "-";
            var stretch = string.Join("  ", m.Stretch.Where(b => b.Jobs > 0).Select(b => Inv($"{b.Name}: {b.P50:0.0}/{b.P95:0.0} (n={b.Jobs})")));
            Console.WriteLine(Inv($"{policy,-12} {name,-12} {FairnessMetrics.Percentile(turn, 50).TotalSeconds,8:0} s {FairnessMetrics.Percentile(turn, 95).TotalSeconds,8:0} s {small.Count(j => j.Censored),10} {m.MinJain ?? 1,9:0.000} {byMode.GetValueOrDefault("smallest", 1),12:0.000} {byMode.GetValueOrDefault("oldest", 1),10:0.000} {(m.Minutes.Count == 0 ? 1 : m.Minutes.Average(x => x.Jain)),9:0.000} {m.Starvation.Values.DefaultIfEmpty().Max().TotalSeconds,8:0} s {m.TenantStarvation.Values.DefaultIfEmpty().Max().TotalSeconds,11:0} s {flood,14}  {stretch}"));
        }
        var last = rows[^1];
        Console.WriteLine("starvation by tenant (full run): " + string.Join(", ", last.Metrics.Starvation.OrderBy(kv => last.Run.TenantNames[kv.Key], StringComparer.Ordinal)
            .Select(kv => Inv($"{last.Run.TenantNames[kv.Key]} {kv.Value.TotalSeconds:0} s"))));
    }

    private static string Inv(FormattableString s) => s.ToString(CultureInfo.InvariantCulture);
}
