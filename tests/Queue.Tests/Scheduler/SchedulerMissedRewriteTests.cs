using Dapper;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Scheduler.SchedulerProcesses;

namespace Queue.Tests.Scheduler;

/// <summary>
/// A real Queue.Scheduler process that misses a period boundary while none runs; a class of its own, so its wait for a
/// 20 s boundary runs beside the other scheduler process tests.
/// </summary>
[TakesAbout(37)]
public sealed class SchedulerMissedRewriteTests
{
    [Fact]
    public async Task A_rewrite_missed_while_no_scheduler_ran_runs_as_soon_as_one_starts()
    {
        var period = TimeSpan.FromSeconds(20);
        var (db, missed, trigger) = await FirstSchedulerKilledBeforeItsNextBoundaryAsync(period);
        await using var _ = db;

        await WaitUntilAsync(missed.AddSeconds(1.5));
        Assert.Equal(0, await RewriteCountAsync(db, missed));
        Assert.True(await TriggerExistsAsync(db, trigger), "nobody fired the boundary while no scheduler ran");

        await using var second = StartScheduler(db, period);
        await second.WaitHealthyAsync();
        var instance = await InstanceAsync(second);
        // The missed boundary's own trigger fires at start-up (misfire policy: fire now), not at a later boundary.
        await WaitForAsync(async () => !await TriggerExistsAsync(db, trigger), "the missed trigger to fire", seconds: 30);
        await WaitForAsync(async () => await RewriteCountByAsync(db, instance, missed) >= 1, "the start-up rewrite", seconds: 30);
    }

    /// <summary>
    /// A database whose one scheduler did its start-up rewrite, stored the next boundary's trigger and was killed before
    /// that boundary (the one it must miss). Started just after a boundary, so its start-up, rewrite and kill fit in one
    /// period even on a loaded machine; should the start-up still take past the boundary (which it may then have fired
    /// itself), the scene is set again in a new database, up to three times.
    /// </summary>
    private static async Task<(FreshDatabase Db, DateTime Missed, string Trigger)> FirstSchedulerKilledBeforeItsNextBoundaryAsync(TimeSpan period)
    {
        for (var attempt = 1; ; attempt++)
        {
            var db = await FreshDatabase.CreateAsync();
            var now = DateTime.UtcNow;
            await WaitUntilAsync(now.Date + TimeSpan.FromTicks((((now - now.Date).Ticks / period.Ticks) + 1) * period.Ticks) + TimeSpan.FromMilliseconds(200));
            DateTime missed, killedAt;
            string trigger;
            await using (var first = StartScheduler(db, period))
            {
                await first.WaitHealthyAsync();
                await WaitForAsync(async () => await RewriteCountAsync(db) >= 1, "the first scheduler's start-up rewrite");
                await using var conn = await db.DataSource.OpenConnectionAsync();
                var last = await conn.ExecuteScalarAsync<DateTime>("SELECT MAX(period_start) FROM rewrite_log");
                missed = last + period;
                // Its trigger for the next boundary is stored, waiting for a node to fire it.
                trigger = global::Queue.Scheduler.Jobs.ReorderJob.TriggerName(new DateTimeOffset(missed, TimeSpan.Zero));
                await WaitForAsync(async () => await TriggerExistsAsync(db, trigger), "the next boundary's trigger");
                first.Kill();
                killedAt = DateTime.UtcNow;
            }
            if (killedAt < missed)
            {
                return (db, missed, trigger);
            }
            await db.DisposeAsync();
            Assert.True(attempt < 3, "the first scheduler was killed before the boundary it must miss (three attempts)");
        }
    }
}
