using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Ordering;
using Queue.Core.Sql;

namespace Queue.Tests.Scheduler;

/// <summary>
/// The swap rewrite's steps (<see cref="OrderingSwap"/>) driven one by one, with writes of every kind between them, as
/// claims, uploads and technicians make them while a rewrite builds the new ordering.
/// </summary>
public sealed class SwapRewriteTests
{
    private static readonly DateTimeOffset ElevenOClock = OrderingTestbed.OldestFirstHour;

    private static readonly DateTime Far = new(2030, 1, 1, 0, 0, 0, DateTimeKind.Utc);

    [Fact]
    public async Task Every_lane_written_while_a_swap_builds_is_in_the_ordering_it_renames_into_place()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, ElevenOClock);
        var tenant = await db.NewTenantAsync();
        var (gone, hinted, overridden, hintedLater) = (await bed.NewJobAsync(tenant, 2), await bed.NewJobAsync(tenant, 3), await bed.NewJobAsync(tenant, 4), await bed.NewJobAsync(tenant, 5));
        await bed.Rewriter.RewriteAsync("test");
        bed.AdvanceTo(OrderingMode.Smallest);

        await using var swap = await db.DataSource.OpenConnectionAsync();
        Assert.Equal(4, await BuildAsync(bed, swap));

        // While the triggers only note keys: a lane removed, a hint raised, an override set, a new job placed.
        await using var writer = await db.DataSource.OpenConnectionAsync();
        await writer.ExecuteAsync("DELETE FROM ordering WHERE job_id = @Id", new { Id = gone });
        await writer.ExecuteAsync("UPDATE ordering SET available_at = @Far WHERE job_id = @Id", new { Far, Id = hinted });
        await bed.AddOverrideAsync(overridden, 7, ElevenOClock.AddDays(1));
        var placedWhileNoting = await bed.NewJobAsync(tenant, 6);
        await OrderingSwap.CatchUpAsync(swap, OrderingBand.Base(0), 0, bed.Clock.GetUtcNow().UtcDateTime, default);

        // While the triggers mirror: a hint raised, a new job placed, a lane removed.
        await writer.ExecuteAsync("UPDATE ordering SET available_at = @Far WHERE job_id = @Id", new { Far, Id = hintedLater });
        var placedWhileMirroring = await bed.NewJobAsync(tenant, 1);
        await writer.ExecuteAsync("DELETE FROM ordering WHERE job_id = @Id", new { Id = placedWhileNoting });
        Assert.Equal("oldest", await writer.ExecuteScalarAsync<string>("SELECT mode FROM ordering WHERE job_id = @Id", new { Id = hinted }));

        await OrderingSwap.SwapAsync(swap, default);

        var lanes = (await writer.QueryAsync<(long JobId, long Value, string Mode, DateTime AvailableAt)>(
            "SELECT job_id, value, mode, available_at FROM ordering ORDER BY job_id")).AsList();
        Assert.Equal([hinted, overridden, hintedLater, placedWhileMirroring], lanes.Select(l => l.JobId));
        Assert.Equal((3L, "smallest", Far), (lanes[0].Value, lanes[0].Mode, lanes[0].AvailableAt));
        Assert.Equal((7L, "override"), (lanes[1].Value, lanes[1].Mode));
        Assert.Equal((5L, "smallest", Far), (lanes[2].Value, lanes[2].Mode, lanes[2].AvailableAt));
        Assert.Equal((1L, "smallest"), (lanes[3].Value, lanes[3].Mode));
        await OrderingTestbed.AssertSwapLeftNothingAsync(writer);
    }

    [Fact]
    public async Task A_swap_that_stopped_with_its_triggers_in_place_leaves_the_old_ordering_working_and_the_next_rewrite_removes_them()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, ElevenOClock);
        var tenant = await db.NewTenantAsync();
        var (first, second) = (await bed.NewJobAsync(tenant, 2), await bed.NewJobAsync(tenant, 3));
        await bed.Rewriter.RewriteAsync("test");
        bed.AdvanceTo(OrderingMode.Smallest);
        await using (var swap = await db.DataSource.OpenConnectionAsync())
        {
            await BuildAsync(bed, swap);
            await OrderingSwap.CatchUpAsync(swap, OrderingBand.Base(0), 0, bed.Clock.GetUtcNow().UtcDateTime, default);
        }

        // Its process gone: the triggers stay and mirror into a table no one will rename, but every write still works.
        await using var conn = await db.DataSource.OpenConnectionAsync();
        Assert.Equal(3L, await TriggersAsync(conn));
        await conn.ExecuteAsync("DELETE FROM ordering WHERE job_id = @Id", new { Id = first });
        var third = await bed.NewJobAsync(tenant, 4);
        Assert.Equal([(second, 10005L, "oldest"), (third, 4L, "smallest")], await ValuesAsync(conn)); // placed in the new period

        var result = await bed.Rewriter.RewriteAsync("test");
        Assert.False(result.Skipped);
        Assert.Equal(0L, await TriggersAsync(conn));
        Assert.Equal([(second, 3L, "smallest"), (third, 4L, "smallest")], await ValuesAsync(conn));
    }

    [Fact]
    public async Task The_override_sweep_removes_the_triggers_of_a_swap_that_stopped_so_they_do_not_wait_for_the_next_rewrite()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, ElevenOClock);
        var tenant = await db.NewTenantAsync();
        var job = await bed.NewJobAsync(tenant, 2);
        await bed.Rewriter.RewriteAsync("test");
        bed.AdvanceTo(OrderingMode.Smallest);
        await using (var swap = await db.DataSource.OpenConnectionAsync())
        {
            await BuildAsync(bed, swap);
        }

        await using var conn = await db.DataSource.OpenConnectionAsync();
        Assert.Equal(3L, await TriggersAsync(conn));
        await bed.Rewriter.ExpireOverridesAsync();
        Assert.Equal(0L, await TriggersAsync(conn));
        Assert.Equal(0L, await conn.ExecuteScalarAsync<long>(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ordering_next'"));
        Assert.Equal([(job, 10000L, "oldest")], await ValuesAsync(conn)); // the old ordering, until the next rewrite
    }

    /// <summary>The swap up to its copy, with the rewriter's own statements; returns the lanes copied.</summary>
    private static async Task<int> BuildAsync(OrderingTestbed bed, MySqlConnection swap)
    {
        var now = bed.Clock.GetUtcNow().UtcDateTime;
        await OrderingSwap.PrepareAsync(swap, default);
        await swap.ExecuteAsync(RewriteSql.CapValuesMemory, new { Bytes = 1 << 24 });
        await swap.ExecuteAsync(RewriteSql.CreateValues);
        await swap.ExecuteAsync(RewriteSql.FillValuesRange, new { Mode = bed.Calendar.Current.ModeName, BandBase = OrderingBand.Base(0), Now = now, RankBase = 0L, FromJob = 0L, ToJob = long.MaxValue });
        return (await OrderingSwap.CopyAsync(swap, OrderingBand.Base(0), 0, now, default)).Copied;
    }

    private static Task<long> TriggersAsync(MySqlConnection conn) =>
        conn.ExecuteScalarAsync<long>("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()");

    private static async Task<List<(long JobId, long Value, string Mode)>> ValuesAsync(MySqlConnection conn) =>
        (await conn.QueryAsync<(long, long, string)>("SELECT job_id, value, mode FROM ordering ORDER BY job_id")).AsList();
}
