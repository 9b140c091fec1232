using Queue.Core.Claims;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Work;

/// <summary>
/// A claim offered more lanes than it needs locks the ones it takes from: a flood of small jobs offers a lane per item
/// wanted, and a claim that locked them all read ten times the rows it took.
/// </summary>
public sealed class ManyLanesClaimTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    [Fact]
    public async Task A_claim_of_fifty_over_sixty_ten_item_jobs_reads_the_lanes_it_takes_from_not_all_sixty()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var jobs = new List<long>();
        for (var j = 0; j < 60; j++)
        {
            jobs.Add((await fx.Api.ClientWithKey(key).CreateJobAsync(new
            {
                name = $"small-{j}",
                tasks = new[] { "many-lanes" },
                documents = Enumerable.Range(0, 10).Select(d => new { name = $"d{d}.txt", content = B64("d") }).ToArray(),
            })).GetProperty("id").GetInt64());
        }
        await using var db = OneSession.Pool(fx.ConnectionString);
        var engine = new ClaimEngine(db, new SeedLaneSelector(), TimeProvider.System, new ClaimCounters());
        var until = DateTime.UtcNow.AddMinutes(5);
        var slots = Enumerable.Range(0, 50).Select(_ => new ClaimSlot("w", until, false)).ToList();

        var before = await OneSession.IndexReadsAsync(db);
        var claimed = await engine.ClaimAsync([new ClaimOrder(["many-lanes"], slots)], default);
        var reads = await OneSession.IndexReadsAsync(db) - before;

        Assert.Equal(50, claimed[0].Count);
        Assert.Equal(jobs.Take(5), claimed[0].Select(i => i.JobId).Distinct().Order());
        // Asked again for 51 rows each after the capped read at once, the other 59 lanes had their 590 items locked.
        Assert.True(reads < 400, $"the claim read {reads} index entries for 50 items from lanes of 10");
    }
}
