using Dapper;
using Queue.Core.Ordering;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Scheduler;

/// <summary>
/// The swap counts its new ordering against the old one before the rename (docs/DESIGN.md "The count before the
/// rename"). A new table that lost lanes, renamed into place, would leave their jobs with work that no claim ever
/// reaches, and the next rewrite, which reads the lanes, would not bring them back. After three short counts the rewrite
/// writes the ordering in place, so the period still gets its order. Here the loss is made by hand
/// between the catch-up and the count; in `Queue.Bench rewrite --jobs 1000000` it was seen twice in about fifteen runs,
/// a claim answered empty right after a rename with a million lanes waiting.
/// </summary>
public sealed class SwapCountTests
{
    private const int Jobs = 300;

    [Fact]
    public async Task A_new_ordering_that_lost_lanes_is_never_renamed_into_place_and_is_built_again()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var (bed, builds) = await SwapsThatLoseLanesAsync(db, build => build == 1);

        var result = await bed.Rewriter.RewriteAsync("test");

        Assert.Equal(2, builds());
        Assert.False(result.Skipped);
        Assert.Equal(OrderingOptions.Swap, result.Method);
        Assert.Equal(Jobs, result.JobsRanked);
        var values = await bed.ValuesByJobAsync();
        Assert.Equal(Enumerable.Range(0, Jobs).Select(r => (10000L + (5 * r), "oldest")), values.OrderBy(v => v.Key).Select(v => v.Value));
        await AssertNothingLeftAsync(db);
    }

    [Fact]
    public async Task A_rewrite_whose_every_swap_loses_lanes_rewrites_the_ordering_in_place_and_keeps_every_lane()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var (bed, builds) = await SwapsThatLoseLanesAsync(db, _ => true);

        var result = await bed.Rewriter.RewriteAsync("test");

        Assert.Equal(OrderingRewriter.SwapAttempts, builds());
        Assert.Equal(OrderingOptions.InPlace, result.Method);
        Assert.Equal(Jobs, result.JobsRanked);
        var values = await bed.ValuesByJobAsync();
        Assert.Equal(Enumerable.Range(0, Jobs).Select(r => (10000L + (5 * r), "oldest")), values.OrderBy(v => v.Key).Select(v => v.Value));
        await AssertNothingLeftAsync(db);
        await using var conn = await db.DataSource.OpenConnectionAsync();
        Assert.Equal(["test"], await conn.QueryAsync<string>("SELECT instance FROM rewrite_log"));
    }

    [Fact]
    public async Task A_short_count_tells_the_operator_whether_the_lanes_went_at_the_copy_or_after_it()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var logger = new RecordingLogger<OrderingRewriter>();
        var (bed, _) = await SwapsThatLoseLanesAsync(db, build => build == 1, logger);

        await bed.Rewriter.RewriteAsync("test");

        // Ten lanes lost after the copy: the statistics taken right after it still saw every lane.
        var redone = Assert.Single(logger.Entries, e => e.Event.Id == 4006);
        Assert.Contains($"held {Jobs - 10} lanes where {Jobs} were due ({Jobs} copied in bulk, about {Jobs} there by the statistics taken right after the copy)", redone.Message);
    }

    [Fact]
    public async Task A_rewrite_given_up_during_its_copy_leaves_the_old_ordering_whole_and_nothing_of_the_swap()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, OrderingTestbed.OldestFirstHour);
        await bed.BulkJobsAsync(await db.NewTenantAsync(), Jobs);
        var before = await bed.ValuesByJobAsync();
        using var giveUp = new CancellationTokenSource();
        var held = bed.HoldTheSwapCopy(TimeSpan.FromSeconds(0.8), () => giveUp.CancelAfter(TimeSpan.FromSeconds(0.3)));

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => bed.Rewriter.RewriteAsync("test", ct: giveUp.Token));

        await held();
        Assert.Equal(before, await bed.ValuesByJobAsync());
        await AssertNothingLeftAsync(db);
        await using var conn = await db.DataSource.OpenConnectionAsync();
        Assert.Equal(0, await conn.ExecuteScalarAsync<long>("SELECT COUNT(*) FROM rewrite_log"));
    }

    /// <summary>
    /// A testbed of <see cref="Jobs"/> jobs whose swap loses ten lanes between its catch-up and its count on the builds
    /// <paramref name="losesOnBuild"/> picks (numbered from 1); <c>Builds</c> tells how many were made.
    /// </summary>
    private static async Task<(OrderingTestbed Bed, Func<int> Builds)> SwapsThatLoseLanesAsync(FreshDatabase db, Func<int, bool> losesOnBuild,
        RecordingLogger<OrderingRewriter>? logger = null)
    {
        var bed = OrderingTestbed.At(db.DataSource, OrderingTestbed.OldestFirstHour, logger: logger);
        await bed.BulkJobsAsync(await db.NewTenantAsync(), Jobs);
        var builds = 0;
        bed.Rewriter.AfterSwapStep = async step =>
        {
            if (step == SwapStep.CaughtUp && losesOnBuild(++builds))
            {
                await LoseLanesAsync(db);
            }
        };
        return (bed, () => builds);
    }

    /// <summary>Ten lanes of the new table gone, as a bulk load that kept fewer rows than it was given would leave it.</summary>
    private static async Task LoseLanesAsync(FreshDatabase db)
    {
        await using var conn = await db.DataSource.OpenConnectionAsync();
        Assert.Equal(10, await conn.ExecuteAsync("DELETE FROM ordering_next ORDER BY job_id LIMIT 10"));
    }

    private static async Task AssertNothingLeftAsync(FreshDatabase db)
    {
        await using var conn = await db.DataSource.OpenConnectionAsync();
        await OrderingTestbed.AssertSwapLeftNothingAsync(conn);
        Assert.Equal(Jobs, await conn.ExecuteScalarAsync<long>("SELECT COUNT(*) FROM ordering"));
    }
}
