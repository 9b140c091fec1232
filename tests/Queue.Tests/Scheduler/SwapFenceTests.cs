using Dapper;
using Queue.Core.Ordering;

namespace Queue.Tests.Scheduler;

/// <summary>
/// The swap's 'rewrite' row lock sits on an idle connection while the swap runs its DDL on another (docs/DESIGN.md
/// "The fence"). When that connection dies, a second rewrite can take the lock while the first swap is still going.
/// </summary>
public sealed class SwapFenceTests
{
    private const int Jobs = 300;

    private static readonly DateTimeOffset ElevenOClock = OrderingTestbed.OldestFirstHour;

    [Fact]
    public async Task A_swap_whose_rewrite_lock_died_never_renames_another_rewrites_table_into_place_and_the_other_rewrite_completes()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var first = OrderingTestbed.At(db.DataSource, ElevenOClock);
        var second = OrderingTestbed.At(db.DataSource, ElevenOClock);
        await first.BulkJobsAsync(await db.NewTenantAsync(), Jobs);

        var firstCaughtUp = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var releaseFirst = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        first.Rewriter.AfterSwapStep = async step =>
        {
            if (step == SwapStep.CaughtUp)
            {
                firstCaughtUp.SetResult();
                await releaseFirst.Task;
            }
        };
        var secondPrepared = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var releaseSecond = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        second.Rewriter.AfterSwapStep = async step =>
        {
            if (step == SwapStep.Prepared)
            {
                secondPrepared.TrySetResult();
                await releaseSecond.Task;
            }
        };

        try
        {
            await RaceAsync(db, first, second, firstCaughtUp, releaseFirst, secondPrepared, releaseSecond);
        }
        finally
        {
            releaseFirst.TrySetResult();
            releaseSecond.TrySetResult();
        }
    }

    private static async Task RaceAsync(FreshDatabase db, OrderingTestbed first, OrderingTestbed second, TaskCompletionSource firstCaughtUp,
        TaskCompletionSource releaseFirst, TaskCompletionSource secondPrepared, TaskCompletionSource releaseSecond)
    {
        // The first swap is ready to rename when the connection that holds its 'rewrite' lock is killed.
        var firstRewrite = Task.Run(() => first.Rewriter.RewriteAsync("first"));
        await firstCaughtUp.Task.WaitAsync(TimeSpan.FromSeconds(30));
        await KillRewriteLockHolderAsync(db);

        // A second rewrite takes the lock. Unfenced, it prepares at once: the first swap's triggers and table dropped,
        // an empty ordering_next in their place. Fenced, it waits for the first swap to rename or give up.
        var secondRewrite = Task.Run(() => second.Rewriter.RewriteAsync("second"));
        await Task.WhenAny(secondPrepared.Task, WaitForNamedLockWaitAsync(db, secondRewrite)).WaitAsync(TimeSpan.FromSeconds(30));

        releaseFirst.SetResult();
        await Assert.ThrowsAnyAsync<Exception>(() => firstRewrite);
        await using var conn = await db.DataSource.OpenConnectionAsync();
        Assert.Equal(Jobs, await conn.ExecuteScalarAsync<long>("SELECT COUNT(*) FROM ordering"));

        releaseSecond.SetResult();
        var result = await secondRewrite.WaitAsync(TimeSpan.FromSeconds(60));
        Assert.False(result.Skipped);
        Assert.Equal(Jobs, result.JobsRanked);
        var values = await second.ValuesByJobAsync();
        Assert.Equal(Enumerable.Range(0, Jobs).Select(r => (10000L + (5 * r), "oldest")), values.OrderBy(v => v.Key).Select(v => v.Value));
        await OrderingTestbed.AssertSwapLeftNothingAsync(conn);
        Assert.Equal(["second"], await conn.QueryAsync<string>("SELECT instance FROM rewrite_log"));
    }

    /// <summary>
    /// KILL CONNECTION from a side session, of the one session of this database with an open transaction: the
    /// rewrite's, idle while its swap runs (the swap's own connection commits as it goes). The server refreshes
    /// information_schema.innodb_trx only when nobody has read it for 0.1 s (tests beside this one read it too,
    /// <see cref="FreshDatabase.WaitForLockWaitAsync"/>), so one read can predate the rewrite's transaction: read
    /// again, every 250 ms for up to 5 s, until it shows.
    /// </summary>
    private static async Task KillRewriteLockHolderAsync(FreshDatabase db)
    {
        await using var conn = await db.DataSource.OpenConnectionAsync();
        var holders = new List<long>();
        await Eventually.HoldsAsync(async () =>
        {
            holders = (await conn.QueryAsync<long>("""
                SELECT t.trx_mysql_thread_id FROM information_schema.innodb_trx t
                JOIN information_schema.processlist p ON p.id = t.trx_mysql_thread_id
                WHERE p.db = DATABASE()
                """)).AsList();
            return holders.Count > 0;
        }, TimeSpan.FromSeconds(5), TimeSpan.FromMilliseconds(250));
        await conn.ExecuteAsync($"KILL CONNECTION {Assert.Single(holders)}");
    }

    /// <summary>Waits, up to 10 s, until a session of this database waits for a named lock, or the task ends.</summary>
    private static async Task WaitForNamedLockWaitAsync(FreshDatabase db, Task task)
    {
        await using var conn = await db.DataSource.OpenConnectionAsync();
        await Eventually.HoldsAsync(async () => task.IsCompleted || await conn.ExecuteScalarAsync<long>(
            "SELECT COUNT(*) FROM information_schema.processlist WHERE db = DATABASE() AND state = 'User lock'") > 0, TimeSpan.FromSeconds(10));
    }
}
