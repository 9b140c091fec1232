namespace Queue.Bench;

/// <summary>
/// <c>dotnet run -c Release --project Queue.Bench -- SCENARIO</c>. Each scenario starts its own private MariaDB and the
/// real services, prints throughput, p50, p99 and RSS, and ends with one <c>target ...: met|missed</c> line per target.
/// </summary>
public static class BenchMain
{
    private static readonly Dictionary<string, Func<string[], Task<int>>> Scenarios = new(StringComparer.Ordinal)
    {
        // Each area registers its scenarios here: ["ingest"] = IngestBench.RunAsync, ...
        ["claim"] = ClaimBench.RunAsync,
        ["rewrite"] = RewriteBench.RunAsync,
        ["simulate"] = Simulation.SimulateCommand.RunAsync,
        ["admin"] = AdminBench.RunAsync,
        ["ingest"] = IngestBench.RunAsync,
        ["upload"] = UploadBench.RunAsync,
        ["status"] = StatusBench.RunAsync,
        ["peers"] = PeersBench.RunAsync,
        ["soak"] = Soak.SoakCommand.RunAsync,
        ["cluster"] = ClusterBench.RunAsync,
        ["trace"] = TraceBench.RunAsync,
        ["fairness"] = FairnessBench.RunAsync,
    };

    public static async Task<int> RunAsync(string[] args)
    {
        if (args.Length == 0 || !Scenarios.TryGetValue(args[0], out var run))
        {
            await Console.Error.WriteLineAsync("usage: dotnet run -c Release --project Queue.Bench -- <" + string.Join('|', Scenarios.Keys) + ">");
            return 64;
        }
        return await run(args[1..]);
    }
}
