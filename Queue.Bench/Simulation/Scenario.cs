namespace Queue.Bench.Simulation;

/// <summary>One job a simulated tenant submits.</summary>
public sealed record Arrival(TimeSpan At, string Tenant, int Items);

/// <summary>
/// A simulated workload. Sizes and time are scaled from the shapes so each run takes minutes on a 2-core box:
/// items / 10 (a 1M-item flood is 100k, 100-item jobs are 10), a 10-minute ordering period instead of an hour, and an
/// hour (6 periods, both modes 3 times) instead of a day. 50 workers at 15 s per item serve 200 items a minute, twice
/// the small tenants' load, so the flood is the only thing that can make them wait (unscaled: 500 workers).
/// </summary>
public sealed record Scenario(string Name, string Description, IReadOnlyList<string> Tenants, IReadOnlyDictionary<string, int> Weights,
    IReadOnlyList<Arrival> Arrivals, string? Flooder, int Workers, TimeSpan ItemTime, TimeSpan Period, TimeSpan Duration)
{
    public const int Scale = 10;

    public static readonly IReadOnlyList<string> Names = ["noisy-neighbour", "split-flood", "quiet-day"];

    public static Scenario? Create(string name) => name switch
    {
        "noisy-neighbour" => Flood(name, jobs: 1, "tenant a submits one 100k-item job (1M / 10); b..k each submit a 10-item job (100 / 10) every minute."),
        "split-flood" => Flood(name, jobs: 1000, "tenant a submits the same 100k items as 1,000 jobs of 100; b..k each submit a 10-item job every minute."),
        "quiet-day" => Quiet(),
        _ => null,
    };

    /// <summary>The same workload without the flooding tenant: the small jobs' solo baseline.</summary>
    public Scenario WithoutFlooder() => Flooder is null ? this
        : this with { Arrivals = Arrivals.Where(a => a.Tenant != Flooder).ToList(), Tenants = Tenants.Where(t => t != Flooder).ToList() };

    private static Scenario Flood(string name, int jobs, string description)
    {
        var small = "bcdefghijk".Select(c => c.ToString()).ToList();
        var arrivals = new List<Arrival>();
        var total = 1_000_000 / Scale;
        for (var j = 0; j < jobs; j++)
        {
            arrivals.Add(new Arrival(TimeSpan.Zero, "a", total / jobs));
        }
        var duration = TimeSpan.FromMinutes(60);
        for (var minute = 0; minute < duration.TotalMinutes; minute++)
        {
            for (var k = 0; k < small.Count; k++)
            {
                // Staggered by 5 s so the ten tenants do not all arrive on the same tick.
                arrivals.Add(new Arrival(TimeSpan.FromMinutes(minute) + TimeSpan.FromSeconds(5 * k), small[k], 100 / Scale));
            }
        }
        return new Scenario(name, description, ["a", .. small], new Dictionary<string, int>(), arrivals.OrderBy(a => a.At).ToList(), "a",
            50, TimeSpan.FromSeconds(15), TimeSpan.FromMinutes(10), duration);
    }

    private static Scenario Quiet()
    {
        var rng = new Random(8);
        var tenants = Enumerable.Range(1, 30).Select(i => $"t{i:00}").ToList();
        var arrivals = new List<Arrival>();
        var duration = TimeSpan.FromMinutes(60);
        // About 5 jobs a minute of 1..40 items (mean ~20): half the capacity, in bursts from random tenants.
        for (var t = TimeSpan.Zero; t < duration; t += TimeSpan.FromSeconds(rng.Next(1, 24)))
        {
            arrivals.Add(new Arrival(t, tenants[rng.Next(tenants.Count)], rng.Next(1, 41)));
        }
        return new Scenario("quiet-day", "30 tenants submit jobs of 1..40 items at random, about half the workers' capacity; t01 has weight 2.",
            tenants, new Dictionary<string, int> { ["t01"] = 2 }, arrivals, null, 50, TimeSpan.FromSeconds(15), TimeSpan.FromMinutes(10), duration);
    }
}
