using Dapper;
using Queue.Core.Claims;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Work;

/// <summary>
/// The lanes of a claim round behind its head job are locked in one range read (docs/DESIGN.md "Lanes read at once"),
/// capped at two rows per lane; a lane that may have been cut short by the cap is asked again on its own.
/// </summary>
public sealed class ClaimReadAtOnceTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    [Fact]
    public async Task A_claim_over_many_one_item_jobs_takes_each_item_once_in_claim_order()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var jobs = new List<long>();
        for (var i = 0; i < 20; i++)
        {
            jobs.Add(await fx.OneItemJobAsync(key, $"one-{i}"));
        }
        await SetValuesAsync(-2_000_000, jobs.Select((job, i) => (job, (long)i)).ToList());

        var claimed = await ClaimAsync(15);

        Assert.Equal(jobs.Take(15), claimed.Select(t => t.JobId));
        Assert.Equal(15, claimed.Select(t => t.Id).Distinct().Count());
    }

    [Fact]
    public async Task A_lane_with_many_items_that_fills_the_shared_read_alone_does_not_hide_the_lanes_behind_it()
    {
        var (_, key) = await fx.NewCustomerAsync();
        // The big job has the lowest id, so the shared read (in key order) meets its items first and reaches the cap
        // of two rows per lane before it reaches the small job's lane; in claim order it comes last.
        var big = (await fx.Api.ClientWithKey(key).CreateJobAsync(new
        {
            name = "big",
            tasks = new[] { "text" },
            documents = Enumerable.Range(0, 10).Select(i => new { name = $"d{i}.txt", content = B64($"d{i}") }).ToArray(),
        })).GetProperty("id").GetInt64();
        var head = await fx.OneItemJobAsync(key, "head");
        var small = await fx.OneItemJobAsync(key, "small");
        await SetValuesAsync(-3_000_000, [(head, 0), (small, 1), (big, 2)]);

        var claimed = await ClaimAsync(12);

        Assert.Equal([head, small, .. Enumerable.Repeat(big, 10)], claimed.Select(t => t.JobId));
        Assert.Equal(12, claimed.Select(t => t.Id).Distinct().Count());
        var bigItems = claimed.Where(t => t.JobId == big).Select(t => t.Id).ToList();
        Assert.Equal(bigItems.Order(), bigItems);
    }

    private async Task<IReadOnlyList<TakenItem>> ClaimAsync(int max)
    {
        var engine = new ClaimEngine(fx.DataSource, new SeedLaneSelector(), TimeProvider.System, new ClaimCounters());
        var expires = DateTime.UtcNow.AddMinutes(5);
        var slots = Enumerable.Range(0, max).Select(k => new ClaimSlot($"w{k}", expires, false)).ToList();
        return (await engine.ClaimAsync([new ClaimOrder(["text"], slots)], default))[0];
    }

    /// <summary>
    /// Places the jobs' lanes in this order, in the current band, whatever the hour's mode, from <paramref name="start"/>:
    /// each test starts below the other's, so items another test left unclaimed come after its own.
    /// </summary>
    private async Task SetValuesAsync(long start, IReadOnlyList<(long Job, long Rank)> order)
    {
        await using var conn = await fx.DataSource.OpenConnectionAsync();
        foreach (var (job, rank) in order)
        {
            await conn.ExecuteAsync($"UPDATE ordering SET value = {Scheduler.LaneValueSql.BandBase} + @Rank WHERE job_id = @Job", new { Job = job, Rank = start + rank });
        }
    }
}
