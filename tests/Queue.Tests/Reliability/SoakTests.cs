using Queue.Bench.Soak;
using Xunit.Abstractions;

namespace Queue.Tests.Reliability;

/// <summary>
/// The soak CI runs (one minute when CI=true, 20 s otherwise): submits, uploads, cancels, claims, completes, fails and
/// extends while workers die holding leases, the Api is killed and restarted and the database is killed and restarted;
/// every acknowledged item is accounted for exactly and none is completed twice.
/// </summary>
public sealed class SoakTests(ITestOutputHelper output)
{
    [Fact]
    public async Task A_soak_with_killed_workers_a_killed_api_and_a_restarted_database_reconciles_every_item_exactly()
    {
        var minutes = Environment.GetEnvironmentVariable("CI") == "true" ? 1.0 : 1.0 / 3;
        var result = await new SoakRun(TimeSpan.FromMinutes(minutes), seed: 12, output.WriteLine).RunAsync();
        foreach (var line in result.Events.Concat(SoakCommand.Summary(result)))
        {
            output.WriteLine(line);
        }
        Assert.True(result.Submitted > 100, $"only {result.Submitted} items were acknowledged: the soak did not load the service");
        Assert.True(result.Reconciled, string.Join('\n', SoakCommand.Summary(result).Concat(result.Events)));
        Assert.Contains(result.Events, e => e.Contains("kill -9 Queue.Api", StringComparison.Ordinal));
        Assert.Contains(result.Events, e => e.Contains("kill -9 mariadbd", StringComparison.Ordinal));
    }
}
