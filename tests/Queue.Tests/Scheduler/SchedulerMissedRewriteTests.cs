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
        await using var db = await FreshDatabase.CreateAsync();
        var period = TimeSpan.FromSeconds(20);
        // Start just after a boundary, so the first scheduler's start-up, its rewrite and its kill all fit in one
        // period even on a loaded machine: started late in a period, it would fire the "missed" boundary itself.
        var now = DateTime.UtcNow;
        await WaitUntilAsync(now.Date + TimeSpan.FromTicks((((now - now.Date).Ticks / period.Ticks) + 1) * period.Ticks) + TimeSpan.FromMilliseconds(200));
        DateTime missed;
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
            Assert.True(DateTime.UtcNow < missed, "the first scheduler was killed before the boundary it must miss");
        }

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
}
