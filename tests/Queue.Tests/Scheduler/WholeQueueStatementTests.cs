using Dapper;
using Queue.Core.Ordering;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Scheduler;

/// <summary>
/// A rewrite's statements over the whole queue grow with it, and must not be cut off by the driver's command timeout
/// (docs/DESIGN.md "Statements over the whole queue"). The swap's copy has its own test (<see cref="SwapCountTests"/>);
/// here the in-place rewrite's fill, one statement for every job: about 6.5 s alone at 1M jobs, so past the default
/// 30 s a few million jobs into a busy queue, and then on every later try of the period.
/// </summary>
public sealed class WholeQueueStatementTests
{
    private const int Jobs = 300;

    [Fact]
    public async Task An_in_place_rewrite_whose_fill_outlasts_the_drivers_command_timeout_still_writes_the_periods_order()
    {
        await using var db = await FreshDatabase.CreateAsync();
        await using var impatient = db.WithCommandTimeout(1);
        var bed = OrderingTestbed.At(impatient, OrderingTestbed.OldestFirstHour, rewriteMethod: OrderingOptions.InPlace);
        await bed.BulkJobsAsync(await db.NewTenantAsync(), Jobs);

        // The fill is the rewrite's first statement that reads jobs: held 2.5 s behind another session's table lock,
        // it outlasts the 1 s timeout as a fill of a few million jobs under claims outlasts the default 30 s.
        await using var holder = await db.DataSource.OpenConnectionAsync();
        await holder.ExecuteAsync("LOCK TABLES jobs WRITE");
        var released = Task.Run(async () =>
        {
            await Task.Delay(TimeSpan.FromSeconds(2.5));
            await holder.ExecuteAsync("UNLOCK TABLES");
        });

        var result = await bed.Rewriter.RewriteAsync("test");

        await released;
        Assert.Equal(OrderingOptions.InPlace, result.Method);
        Assert.Equal(Jobs, result.JobsRanked);
        Assert.True(result.Duration > TimeSpan.FromSeconds(2), $"the fill was not held: {result.Duration}");
        var values = await bed.ValuesByJobAsync();
        Assert.Equal(Enumerable.Range(0, Jobs).Select(r => (10000L + (5 * r), "oldest")), values.OrderBy(v => v.Key).Select(v => v.Value));
    }
}
