using Dapper;
using MySqlConnector;
using Queue.Core.Ordering;

namespace Queue.Tests.Scheduler;

/// <summary>
/// A rewrite's statements over the whole queue grow with it, and must not be cut off by the driver's command timeout
/// (docs/DESIGN.md "Statements over the whole queue"). Each test here runs the rewrite on a data source whose commands
/// time out after 1 s, and holds one such statement 2.5 s, as a queue a few million jobs deep under claims outlasts the
/// default 30 s.
/// </summary>
public sealed class WholeQueueStatementTests
{
    private const int Jobs = 300;

    [Fact]
    public async Task A_copy_that_outlasts_the_drivers_command_timeout_is_not_interrupted_and_every_lane_is_renamed_into_place()
    {
        // The driver enforces a command timeout with KILL QUERY, and one that lands while InnoDB builds a bulk load's
        // indexes empties the table behind an OK (docs/DESIGN.md "The count before the rename").
        await using var db = await FreshDatabase.CreateAsync();
        await using var impatient = db.WithCommandTimeout(1);
        var bed = await BedAsync(db, impatient, OrderingOptions.Swap);
        var held = bed.HoldTheSwapCopy(TimeSpan.FromSeconds(2.5));

        var result = await bed.Rewriter.RewriteAsync("test");

        await held();
        Assert.Equal(OrderingOptions.Swap, result.Method);
        Assert.Equal(Jobs, result.LanesUpdated);
        Assert.Equal(Jobs, (await bed.ValuesByJobAsync()).Count);
    }

    [Fact]
    public async Task An_in_place_rewrite_whose_fill_outlasts_the_drivers_command_timeout_still_writes_the_periods_order()
    {
        // The fill is one statement for every job (about 6.5 s alone at 1M jobs), and the rewrite's first statement
        // that reads jobs: here held behind another session's table lock.
        await using var db = await FreshDatabase.CreateAsync();
        await using var impatient = db.WithCommandTimeout(1);
        var bed = await BedAsync(db, impatient, OrderingOptions.InPlace);
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

    /// <summary>An oldest-first period's rewrite by <paramref name="method"/> over <see cref="Jobs"/> one-lane jobs, on <paramref name="impatient"/>.</summary>
    private static async Task<OrderingTestbed> BedAsync(FreshDatabase db, MySqlDataSource impatient, string method)
    {
        var bed = OrderingTestbed.At(impatient, OrderingTestbed.OldestFirstHour, rewriteMethod: method);
        await bed.BulkJobsAsync(await db.NewTenantAsync(), Jobs);
        return bed;
    }
}
