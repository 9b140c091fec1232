using System.Diagnostics;
using Dapper;
using MySqlConnector;
using Queue.Core.Ordering;

namespace Queue.Tests.Scheduler;

/// <summary>
/// The swap's steps that need ordering whole (its triggers, its rename) against a transaction that keeps ordering open,
/// as a claim, an upload or a long report does: docs/DESIGN.md "The swap rewrite".
/// </summary>
public sealed class SwapMetadataLockTests
{
    private static readonly DateTimeOffset ElevenOClock = OrderingTestbed.OldestFirstHour;

    [Fact]
    public async Task A_swap_kept_waiting_by_an_open_transaction_does_not_hold_back_the_reads_of_the_ordering_that_come_after_it_and_finishes_once_it_ends()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, ElevenOClock);
        var tenant = await db.NewTenantAsync();
        var (small, big) = (await bed.NewJobAsync(tenant, 2), await bed.NewJobAsync(tenant, 5));
        await bed.Rewriter.RewriteAsync("test");
        bed.AdvanceTo(OrderingMode.Smallest);

        // A transaction that read the ordering keeps it until it ends, longer than the swap looks for a free instant.
        await using var holder = await db.DataSource.OpenConnectionAsync();
        await using var held = await holder.BeginTransactionAsync();
        await holder.ExecuteScalarAsync<long>("SELECT COUNT(*) FROM ordering", transaction: held);
        var rewrite = Task.Run(() => bed.Rewriter.RewriteAsync("test"));

        // The swap made ordering_next and now needs ordering whole for its triggers.
        await using var reader = await db.DataSource.OpenConnectionAsync();
        var watch = Stopwatch.StartNew();
        while (await reader.ExecuteScalarAsync<long>(
                   "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ordering_next'") == 0)
        {
            Assert.True(watch.Elapsed < TimeSpan.FromSeconds(10), "the swap never made ordering_next");
            Assert.False(rewrite.IsCompleted, "the rewrite ended before it needed ordering whole");
            await Task.Delay(10);
        }

        // A statement that waited for the lock would hold every read behind it for up to its second of waiting.
        var slowest = TimeSpan.Zero;
        for (var i = 0; i < 8; i++)
        {
            var read = Stopwatch.StartNew();
            Assert.Equal(small, await reader.ExecuteScalarAsync<long>("SELECT job_id FROM ordering ORDER BY value, job_id LIMIT 1"));
            slowest = read.Elapsed > slowest ? read.Elapsed : slowest;
            await Task.Delay(100);
        }
        Assert.True(slowest < TimeSpan.FromMilliseconds(200), $"a read of the ordering waited {slowest.TotalMilliseconds:F0} ms behind the swap");
        Assert.False(rewrite.IsCompleted);

        // Past its search the swap queues for the lock like any DDL statement, and goes on once the holder ends.
        await Task.Delay(OrderingSwap.FreeWindowSearch);
        await held.CommitAsync();
        var result = await rewrite.WaitAsync(TimeSpan.FromSeconds(30));
        Assert.False(result.Skipped);
        Assert.Equal([(small, 2L, "smallest"), (big, 5L, "smallest")],
            (await reader.QueryAsync<(long, long, string)>("SELECT job_id, value, mode FROM ordering ORDER BY job_id")).AsList());
        Assert.Equal(0L, await reader.ExecuteScalarAsync<long>("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()"));
    }
}
