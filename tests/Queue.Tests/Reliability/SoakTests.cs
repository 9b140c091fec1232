using Queue.Bench.Soak;
using Xunit.Abstractions;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Reliability;

/// <summary>
/// The fault soak CI runs (one minute when CI=true, 30 s otherwise): submits, uploads, cancels, claims, completes, fails
/// and extends while workers die holding leases, and the Api's connections to MariaDB lose COMMIT answers, are reset,
/// delayed and refused, the Api is killed and restarted, and the database is killed and restarted; every acknowledged
/// item is accounted for exactly, and nothing (job, document, item, completion) is made twice.
/// </summary>
[TakesAbout(100)]
public sealed class SoakTests(ITestOutputHelper output)
{
    [Fact]
    public async Task A_soak_with_random_faults_reconciles_every_item_exactly_and_makes_nothing_twice()
    {
        var minutes = Environment.GetEnvironmentVariable("CI") == "true" ? 1.0 : 0.5;
        var result = await new SoakRun(TimeSpan.FromMinutes(minutes), seed: 12, output.WriteLine, faults: true).RunAsync();
        var summary = string.Join('\n', SoakCommand.Summary(result).Concat(result.Events));
        foreach (var line in SoakCommand.Summary(result))
        {
            output.WriteLine(line);
        }
        Assert.True(result.Submitted > 100, $"only {result.Submitted} items were acknowledged: the soak did not load the service");
        Assert.True(result.Exact, summary);
        Assert.Equal(0, result.MissingJobs);
        Assert.Equal(new SoakDuplicates(0, 0, 0, 0, 0), result.Duplicates);
        foreach (var kind in new[] { SoakChaos.CommitCuts, SoakChaos.Resets, SoakChaos.Delays, SoakChaos.Refusals, SoakChaos.ApiKills, SoakChaos.DatabaseRestarts })
        {
            Assert.True(result.Faults.GetValueOrDefault(kind) > 0, $"no {kind} happened:\n{summary}");
        }
    }
}
