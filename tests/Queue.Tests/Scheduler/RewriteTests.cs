using System.Text.Json;
using Dapper;
using Queue.Core.Data;
using Microsoft.Extensions.Options;
using Microsoft.Extensions.Time.Testing;
using Queue.Core.Ordering;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Scheduler;

[TakesAbout(32)]
public sealed class RewriteTests
{
    // 10:00 UTC: period 10 of the day with the default one-hour period, so smallest-first.
    private static readonly DateTimeOffset TenOClock = new(2026, 11, 22, 10, 0, 0, TimeSpan.Zero);

    [Fact]
    public void Modes_alternate_by_whole_periods_since_midnight_in_the_configured_zone()
    {
        var clock = new FakeTimeProvider(TenOClock);
        var hourly = new OrderingCalendar(clock, Options.Create(new OrderingOptions()));
        Assert.Equal(OrderingMode.Smallest, hourly.At(new DateTimeOffset(2026, 11, 22, 0, 0, 0, TimeSpan.Zero)).Mode);
        Assert.Equal(OrderingMode.Smallest, hourly.At(new DateTimeOffset(2026, 11, 22, 10, 59, 59, TimeSpan.Zero)).Mode);
        Assert.Equal(OrderingMode.Oldest, hourly.At(new DateTimeOffset(2026, 11, 22, 11, 0, 0, TimeSpan.Zero)).Mode);
        Assert.Equal(OrderingMode.Oldest, hourly.At(new DateTimeOffset(2026, 11, 22, 23, 30, 0, TimeSpan.Zero)).Mode);
        Assert.Equal(OrderingMode.Smallest, hourly.At(new DateTimeOffset(2026, 11, 23, 0, 0, 0, TimeSpan.Zero)).Mode);

        var twentySeconds = new OrderingCalendar(clock, Options.Create(new OrderingOptions { Period = TimeSpan.FromSeconds(20) }));
        var p = twentySeconds.At(new DateTimeOffset(2026, 11, 22, 10, 0, 25, TimeSpan.Zero));
        Assert.Equal(1801, p.Index); // 10 h * 180 + 1
        Assert.Equal(OrderingMode.Oldest, p.Mode);
        Assert.Equal(new DateTimeOffset(2026, 11, 22, 10, 0, 20, TimeSpan.Zero), p.Start);
        Assert.Equal(new DateTimeOffset(2026, 11, 22, 10, 0, 40, TimeSpan.Zero), p.End);
        Assert.Equal(OrderingMode.Smallest, twentySeconds.At(p.End).Mode);

        // 10:00 UTC is 11:00 in Berlin (winter), an odd hour there.
        var berlin = new OrderingCalendar(clock, Options.Create(new OrderingOptions { TimeZone = "Europe/Berlin" }));
        Assert.Equal(OrderingMode.Oldest, berlin.At(TenOClock).Mode);
        Assert.Equal(new DateTimeOffset(2026, 11, 21, 23, 0, 0, TimeSpan.Zero), berlin.At(new DateTimeOffset(2026, 11, 21, 23, 10, 0, TimeSpan.Zero)).Start);
    }

    [Fact]
    public async Task Consecutive_rewrites_alternate_the_mode_and_log_each_period_once()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, TenOClock.AddSeconds(5), TimeSpan.FromSeconds(20));
        var tenant = await db.NewTenantAsync();
        var job = await bed.NewJobAsync(tenant, 3);

        var modes = new List<string>();
        for (var i = 0; i < 4; i++)
        {
            var r = await bed.Rewriter.RewriteAsync("test");
            Assert.False(r.Skipped);
            modes.Add((await bed.ValuesByJobAsync())[job].Mode);
            bed.Clock.Advance(TimeSpan.FromSeconds(20));
        }
        string[] alternating = ["smallest", "oldest", "smallest", "oldest"];
        Assert.Equal(alternating, modes);

        await using var conn = await db.DataSource.OpenConnectionAsync();
        var log = (await conn.QueryAsync<(DateTime PeriodStart, string Mode, int JobsRanked)>(
            "SELECT period_start, mode, jobs_ranked FROM rewrite_log ORDER BY id")).AsList();
        Assert.Equal(4, log.Count);
        Assert.Equal(modes, log.Select(l => l.Mode));
        Assert.Equal(
            Enumerable.Range(0, 4).Select(i => TenOClock.AddSeconds(20 * i).UtcDateTime),
            log.Select(l => l.PeriodStart));
        Assert.All(log, l => Assert.Equal(1, l.JobsRanked));
    }

    [Fact]
    public async Task Smallest_first_gives_each_job_its_items_not_yet_done_or_dead()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, TenOClock.AddMinutes(-30)); // 09:30, oldest-first
        var tenant = await db.NewTenantAsync();
        var a = await bed.NewJobAsync(tenant, 10, ["text", "thumbnail"], done: 5, dead: 2, cancelled: 1); // 20 items, 12 left
        var b = await bed.NewJobAsync(tenant, 3);                                                         // 3 left
        var c = await bed.NewJobAsync(tenant, 7, done: 2);                                                // 5 left
        await bed.CompleteAsync(c, 1);                                                                    // 4 left

        bed.AdvanceTo(OrderingMode.Smallest);
        var r = await bed.Rewriter.RewriteAsync("test");

        Assert.Equal("smallest", r.Period.ModeName);
        Assert.Equal(3, r.JobsRanked);
        var values = await bed.ValuesByJobAsync();
        Assert.Equal((12L, "smallest"), values[a]);
        Assert.Equal((3L, "smallest"), values[b]);
        Assert.Equal((4L, "smallest"), values[c]);
        Assert.Equal(2, (await bed.LanesAsync()).Count(l => l.JobId == a));
    }

    /// <summary>With fill ranges of one or two job ids, the ranks run on from range to range past the finished job.</summary>
    [Theory]
    [InlineData(20_000)]
    [InlineData(2)]
    [InlineData(1)]
    public async Task Oldest_first_gives_10000_plus_5_times_the_rank_by_age_among_jobs_with_work_whatever_the_fill_ranges(int fillJobs)
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, TenOClock, rewriteFillJobs: fillJobs);
        var tenant = await db.NewTenantAsync();
        var first = await bed.NewJobAsync(tenant, 50);
        var finished = await bed.NewJobAsync(tenant, 2);
        var second = await bed.NewJobAsync(tenant, 1, ["text", "thumbnail"]);
        var overridden = await bed.NewJobAsync(tenant, 4);
        var third = await bed.NewJobAsync(tenant, 9);
        await bed.AddOverrideAsync(overridden, 3, TenOClock.AddHours(5));
        await bed.CompleteAsync(finished, 2);

        bed.AdvanceTo(OrderingMode.Oldest);
        var r = await bed.Rewriter.RewriteAsync("test");

        Assert.Equal(4, r.JobsRanked);
        var values = await bed.ValuesByJobAsync();
        Assert.Equal((10000L, "oldest"), values[first]);
        Assert.Equal((10005L, "oldest"), values[second]);
        // An overridden job keeps its priority but still holds its place in the age ranking.
        Assert.Equal((3L, "override"), values[overridden]);
        Assert.Equal((10015L, "oldest"), values[third]);
        Assert.False(values.ContainsKey(finished));
    }

    /// <summary>With fill ranges of 700 job ids, the table fills part-way and the fill starts again on disk from the first range.</summary>
    [Theory]
    [InlineData(20_000)]
    [InlineData(700)]
    public async Task A_queue_too_large_for_the_in_memory_working_table_is_rewritten_on_disk_with_every_job_ranked(int fillJobs)
    {
        await using var db = await FreshDatabase.CreateAsync();
        // 16 KiB (the smallest MEMORY table) holds a few hundred jobs' values; 3,000 fill it.
        var bed = OrderingTestbed.At(db.DataSource, TenOClock, rewriteMemoryBytes: 16_384, rewriteFillJobs: fillJobs);
        var tenant = await db.NewTenantAsync();
        Assert.Equal(3000, await bed.BulkJobsAsync(tenant, 3000));

        bed.AdvanceTo(OrderingMode.Oldest);
        var r = await bed.Rewriter.RewriteAsync("test");

        Assert.Equal(3000, r.JobsRanked);
        Assert.Equal(3000, r.LanesUpdated);
        var values = (await bed.ValuesByJobAsync()).OrderBy(v => v.Key).Select(v => v.Value).ToList();
        Assert.Equal(Enumerable.Range(0, 3000).Select(rank => (10000L + (5L * rank), "oldest")), values);
    }

    [Fact]
    public async Task A_rewrite_writes_the_head_of_the_claim_order_last_so_claims_can_still_hint_it_while_the_rest_moves()
    {
        await using var db = await FreshDatabase.CreateAsync();
        // One job per statement, so the order the lanes are written in shows in which of them the rewrite holds.
        var bed = OrderingTestbed.At(db.DataSource, TenOClock, rewriteSliceJobs: 1, rewriteMethod: OrderingOptions.InPlace);
        var tenant = await db.NewTenantAsync();
        await bed.BulkJobsAsync(tenant, 50);
        await using var conn = await db.DataSource.OpenConnectionAsync();
        // The oldest job heads the walk, and the primary key's order is the walk's: writing by id would reach it first.
        await conn.ExecuteAsync($"UPDATE ordering SET value = {LaneValueSql.BandBase} + job_id");
        var head = await conn.ExecuteScalarAsync<long>("SELECT MIN(job_id) FROM ordering");

        // A claim holds the head lane (it is writing the lane's hint) when the rewrite reaches it.
        await using var claim = await db.DataSource.OpenConnectionAsync();
        var claimTx = await claim.BeginReadCommittedAsync(default);
        await claim.ExecuteAsync("SELECT job_id FROM ordering WHERE job_id = @Head FOR UPDATE", new { Head = head }, claimTx);
        bed.AdvanceTo(OrderingMode.Oldest);
        var rewrite = bed.Rewriter.RewriteAsync("test");
        await db.WaitForLockWaitAsync(rewrite);
        Assert.False(rewrite.IsCompleted, "the rewrite did not wait for the head lane");

        // Every other lane was written before the head: the rewrite holds each of them.
        await using (var probe = await db.DataSource.OpenConnectionAsync())
        {
            var probeTx = await probe.BeginReadCommittedAsync(default);
            var free = (await probe.QueryAsync<long>(
                "SELECT job_id FROM ordering WHERE job_id <> @Head FOR UPDATE SKIP LOCKED", new { Head = head }, probeTx)).ToList();
            await probeTx.RollbackAsync();
            Assert.Empty(free);
        }
        await claimTx.RollbackAsync();
        var r = await rewrite;

        Assert.Equal(50, r.LanesUpdated);
        var values = (await bed.ValuesByJobAsync()).OrderBy(v => v.Key).Select(v => v.Value).ToList();
        Assert.Equal(Enumerable.Range(0, 50).Select(rank => (10000L + (5L * rank), "oldest")), values);
    }

    [Fact]
    public async Task An_active_override_keeps_its_priority_in_both_modes_until_it_expires()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, TenOClock);
        var tenant = await db.NewTenantAsync();
        var big = await bed.NewJobAsync(tenant, 40);
        var small = await bed.NewJobAsync(tenant, 2);
        var overrideId = await bed.AddOverrideAsync(big, 1, TenOClock.AddMinutes(90));

        await bed.Rewriter.RewriteAsync("test");                 // 10:00 smallest
        Assert.Equal((1L, "override"), (await bed.ValuesByJobAsync())[big]);
        Assert.Equal((2L, "smallest"), (await bed.ValuesByJobAsync())[small]);

        bed.AdvanceTo(OrderingMode.Oldest);                       // 11:00:01 oldest, override still active
        var r = await bed.Rewriter.RewriteAsync("test");
        Assert.Equal(0, r.OverridesExpired);
        Assert.Equal((1L, "override"), (await bed.ValuesByJobAsync())[big]);
        Assert.Equal((10005L, "oldest"), (await bed.ValuesByJobAsync())[small]);

        bed.AdvanceTo(OrderingMode.Smallest);                     // 12:00:01: expired at 11:30
        r = await bed.Rewriter.RewriteAsync("test");
        Assert.Equal(1, r.OverridesExpired);
        Assert.Equal((40L, "smallest"), (await bed.ValuesByJobAsync())[big]);

        await using var conn = await db.DataSource.OpenConnectionAsync();
        Assert.Equal(0, await conn.ExecuteScalarAsync<int>("SELECT active FROM overrides WHERE id = @Id", new { Id = overrideId }));
        var audit = await conn.QuerySingleAsync<(string Actor, string Action, long JobId, long TenantId, string Before, string After)>(
            "SELECT actor, action, job_id, tenant_id, before_json, after_json FROM audit_log WHERE action = 'override.expire'");
        Assert.Equal(("scheduler", "override.expire", big, tenant), (audit.Actor, audit.Action, audit.JobId, audit.TenantId));
        using var before = JsonDocument.Parse(audit.Before);
        using var after = JsonDocument.Parse(audit.After);
        Assert.Equal(overrideId, before.RootElement.GetProperty("overrideId").GetInt64());
        Assert.True(before.RootElement.GetProperty("active").GetBoolean());
        Assert.False(after.RootElement.GetProperty("active").GetBoolean());
        Assert.Equal(1, before.RootElement.GetProperty("priority").GetInt64());
    }

    [Fact]
    public async Task The_override_sweep_ends_an_expired_override_between_rewrites_with_an_audit_row()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, TenOClock.AddHours(1)); // 11:00, oldest-first
        var tenant = await db.NewTenantAsync();
        var older = await bed.NewJobAsync(tenant, 5);
        var newer = await bed.NewJobAsync(tenant, 5);
        await bed.AddOverrideAsync(newer, 7, TenOClock.AddHours(1).AddMinutes(10));
        await bed.Rewriter.RewriteAsync("test");
        Assert.Equal((7L, "override"), (await bed.ValuesByJobAsync())[newer]);

        bed.Clock.Advance(TimeSpan.FromMinutes(5));
        Assert.Equal(0, await bed.Rewriter.ExpireOverridesAsync());
        Assert.Equal((7L, "override"), (await bed.ValuesByJobAsync())[newer]);

        bed.Clock.Advance(TimeSpan.FromMinutes(6));
        Assert.Equal(1, await bed.Rewriter.ExpireOverridesAsync());
        var values = await bed.ValuesByJobAsync();
        Assert.Equal((10000L, "oldest"), values[older]);
        Assert.Equal((10005L, "oldest"), values[newer]); // its rank by age, at once, not at 12:00
        Assert.Equal(0, await bed.Rewriter.ExpireOverridesAsync());

        await using var conn = await db.DataSource.OpenConnectionAsync();
        Assert.Equal(1, await conn.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM audit_log WHERE action = 'override.expire' AND actor = 'scheduler' AND job_id = @Id", new { Id = newer }));
    }

    [Fact]
    public async Task A_lane_written_in_the_old_band_during_a_rewrite_is_moved_into_the_new_band_with_its_value()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, TenOClock.AddHours(1), rewriteMethod: OrderingOptions.InPlace); // oldest-first
        var tenant = await db.NewTenantAsync();
        var older = await bed.NewJobAsync(tenant, 3);
        var late = await bed.NewJobAsync(tenant, 5);
        await bed.Rewriter.RewriteAsync("test");
        bed.AdvanceTo(OrderingMode.Smallest);
        await bed.Rewriter.RewriteAsync("test");
        var stored = await bed.StoredValuesAsync();

        // What a writer that read the band just before a rewrite committed leaves behind: its lane, one band too low,
        // ahead of the whole ordering.
        await using var conn = await db.DataSource.OpenConnectionAsync();
        await conn.ExecuteAsync("UPDATE ordering SET value = value - 4398046511104 WHERE job_id = @Id", new { Id = late });
        Assert.Equal(late, await conn.ExecuteScalarAsync<long>("SELECT job_id FROM ordering ORDER BY value, job_id LIMIT 1"));

        await bed.Rewriter.ExpireOverridesAsync();
        Assert.Equal(stored, await bed.StoredValuesAsync());
        Assert.Equal(older, await conn.ExecuteScalarAsync<long>("SELECT job_id FROM ordering ORDER BY value, job_id LIMIT 1"));
    }

    [Theory]
    [InlineData(5)]
    [InlineData(0)] // the wrap: the band before band 0 is the last one, at the top of BIGINT
    public async Task Right_after_a_rewrite_a_lane_left_in_the_band_before_it_moves_into_the_rewrite_band_and_older_bands_wait_for_the_sweep(int band)
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, TenOClock, rewriteMethod: OrderingOptions.InPlace); // smallest-first
        var tenant = await db.NewTenantAsync();
        var straggler = await bed.NewJobAsync(tenant, 3);
        var older = await bed.NewJobAsync(tenant, 4);
        var previous = band == 0 ? OrderingBand.Count - 1 : band - 1;
        await using var conn = await db.DataSource.OpenConnectionAsync();
        await conn.ExecuteAsync("UPDATE ordering_band SET band = @Band WHERE id = 1", new { Band = band });
        await conn.ExecuteAsync("UPDATE ordering SET value = @Value WHERE job_id = @Id", new { Value = OrderingBand.Stored(previous, 3), Id = straggler });
        await conn.ExecuteAsync("UPDATE ordering SET value = @Value WHERE job_id = @Id", new { Value = OrderingBand.Stored(previous - 1, 4), Id = older });

        await conn.ExecuteAsync(Queue.Core.Sql.RewriteSql.MoveToBandAfterRewrite, new { Mode = "smallest" });

        long StoredOf(long job) => conn.ExecuteScalar<long>("SELECT value FROM ordering WHERE job_id = @Id", new { Id = job });
        Assert.Equal(OrderingBand.Stored(band, 3), StoredOf(straggler));
        Assert.Equal(OrderingBand.Stored(previous - 1, 4), StoredOf(older));
        await bed.Rewriter.ExpireOverridesAsync();
        Assert.Equal(OrderingBand.Stored(band, 4), StoredOf(older));
    }

    [Fact]
    public async Task A_rewrite_waits_for_a_writer_that_placed_lanes_in_the_old_band_and_commits_them_in_the_new_one()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, TenOClock.AddHours(1), rewriteMethod: OrderingOptions.InPlace); // oldest-first
        var tenant = await db.NewTenantAsync();
        await bed.BulkJobsAsync(tenant, 500);
        var late = await bed.NewJobAsync(tenant, 4);
        await using var conn = await db.DataSource.OpenConnectionAsync();
        await conn.ExecuteAsync("DELETE FROM ordering WHERE job_id = @Id", new { Id = late });
        var before = await conn.ExecuteScalarAsync<int>("SELECT band FROM ordering_band");

        // A writer places the job's lanes (reading the band, share-locked) and has not committed when the rewrite,
        // which snapshotted the ordering without it, wants to move the band.
        await using var writer = await db.DataSource.OpenConnectionAsync();
        var tx = await writer.BeginReadCommittedAsync(default);
        bed.AdvanceTo(OrderingMode.Smallest);
        await bed.Lanes.PlaceAsync(writer, tx, late, ["text"], default);
        var rewrite = bed.Rewriter.RewriteAsync("test");
        await db.WaitForLockWaitAsync(rewrite);
        Assert.False(rewrite.IsCompleted, "the rewrite moved the band under a writer that had read it");
        await tx.CommitAsync();
        await rewrite;

        Assert.Equal(before + 1, await conn.ExecuteScalarAsync<int>("SELECT band FROM ordering_band"));
        var stored = await conn.ExecuteScalarAsync<long>("SELECT value FROM ordering WHERE job_id = @Id", new { Id = late });
        Assert.Equal(OrderingBand.Stored(before + 1, 4), stored);
        Assert.Equal((4L, "smallest"), (await bed.ValuesByJobAsync())[late]);
    }

    [Fact]
    public async Task Claims_and_positions_see_the_current_band_only_and_a_lane_left_in_an_older_one_is_moved_back_into_it()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, TenOClock, rewriteMethod: OrderingOptions.InPlace); // smallest-first
        var tenant = await db.NewTenantAsync();
        var first = await bed.NewJobAsync(tenant, 3);
        var left = await bed.NewJobAsync(tenant, 1);
        await bed.Rewriter.RewriteAsync("test");
        await using var conn = await db.DataSource.OpenConnectionAsync();
        await conn.ExecuteAsync("UPDATE ordering SET value = value - 4398046511104 WHERE job_id = @Id", new { Id = left });
        var now = bed.Clock.GetUtcNow().UtcDateTime;

        var firstValue = await conn.ExecuteScalarAsync<long>("SELECT value FROM ordering WHERE job_id = @Id", new { Id = first });
        Task<JobsAhead> AheadOfFirstAsync() => QueuePosition.AheadAsync(conn, first, firstValue, 1, now, _ => Task.FromResult(1d), default);

        // As the old entries a rewrite leaves for purge: not walked, and not counted ahead of anyone.
        Assert.Equal([first], await conn.QueryAsync<long>(Queue.Core.Sql.ClaimSql.SeedLanesAny, new { Now = now, Limit = 8 }));
        Assert.Equal(0, (await AheadOfFirstAsync()).Jobs);
        await bed.Rewriter.ExpireOverridesAsync();
        Assert.Equal([left, first], await conn.QueryAsync<long>(Queue.Core.Sql.ClaimSql.SeedLanesAny, new { Now = now, Limit = 8 }));
        Assert.Equal(1, (await AheadOfFirstAsync()).Jobs);
    }

    [Fact]
    public async Task Lanes_of_jobs_with_no_work_left_and_of_cancelled_jobs_are_removed()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, TenOClock);
        var tenant = await db.NewTenantAsync();
        var working = await bed.NewJobAsync(tenant, 2, ["text", "thumbnail"]);
        var drained = await bed.NewJobAsync(tenant, 2, ["text", "thumbnail"]);
        var cancelled = await bed.NewJobAsync(tenant, 3);
        await bed.CompleteAsync(drained, 4);
        await using (var conn = await db.DataSource.OpenConnectionAsync())
        {
            await conn.ExecuteAsync("UPDATE jobs SET state = 3 WHERE id = @Id", new { Id = cancelled });
        }
        Assert.Equal(5, (await bed.LanesAsync()).Count);

        var r = await bed.Rewriter.RewriteAsync("test");

        Assert.Equal(3, r.LanesRemoved);
        Assert.Equal(1, r.JobsRanked);
        Assert.Equal(new[] { working }, (await bed.LanesAsync()).Select(l => l.JobId).Distinct());
    }

    [Fact]
    public async Task A_rerun_of_the_same_period_changes_nothing_and_is_not_logged_twice()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, TenOClock.AddHours(1));
        var tenant = await db.NewTenantAsync();
        for (var i = 0; i < 5; i++)
        {
            await bed.NewJobAsync(tenant, i + 1);
        }
        var first = await bed.Rewriter.RewriteAsync("a");
        var lanes = await bed.LanesAsync();

        var again = await bed.Rewriter.RewriteAsync("b");
        var forced = await bed.Rewriter.RewriteAsync("c", force: true);

        Assert.False(first.Skipped);
        Assert.True(again.Skipped);
        Assert.False(forced.Skipped);
        // A forced rerun moves every lane into the next band (OrderingBand), with the same values.
        Assert.Equal(5, forced.LanesUpdated);
        Assert.Equal(lanes, await bed.LanesAsync());
        await using var conn = await db.DataSource.OpenConnectionAsync();
        string[] instances = ["a", "c"];
        Assert.Equal(instances, await conn.QueryAsync<string>("SELECT instance FROM rewrite_log ORDER BY id"));
    }

    [Fact]
    public async Task A_trigger_fired_a_moment_before_its_boundary_rewrites_the_new_period()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, TenOClock.AddHours(1).AddMilliseconds(-3)); // 10:59:59.997
        var tenant = await db.NewTenantAsync();
        var job = await bed.NewJobAsync(tenant, 3);

        var r = await bed.Rewriter.RewriteAsync("test", periodOf: TenOClock.AddHours(1));

        Assert.Equal(TenOClock.AddHours(1), r.Period.Start);
        Assert.Equal((10000L, "oldest"), (await bed.ValuesByJobAsync())[job]);
    }

    [Fact]
    public async Task New_jobs_between_rewrites_get_a_provisional_value_in_the_current_mode()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, TenOClock.AddHours(1)); // 11:00 oldest
        var tenant = await db.NewTenantAsync();
        var a = await bed.NewJobAsync(tenant, 4);
        var b = await bed.NewJobAsync(tenant, 4);
        await bed.Rewriter.RewriteAsync("test");

        bed.Clock.Advance(TimeSpan.FromMinutes(10));
        var late = await bed.NewJobAsync(tenant, 1);
        var values = await bed.ValuesByJobAsync();
        Assert.Equal((10000L, "oldest"), values[a]);
        Assert.Equal((10005L, "oldest"), values[b]);
        Assert.Equal((10010L, "oldest"), values[late]); // the highest value plus 5: never ahead of an older job
        var later = await bed.NewJobAsync(tenant, 1);
        Assert.Equal((10015L, "oldest"), (await bed.ValuesByJobAsync())[later]);

        bed.AdvanceTo(OrderingMode.Smallest);
        await bed.Rewriter.RewriteAsync("test");
        bed.Clock.Advance(TimeSpan.FromMinutes(10));
        var fresh = await bed.NewJobAsync(tenant, 2, ["text", "thumbnail"]);
        Assert.Equal((4L, "smallest"), (await bed.ValuesByJobAsync())[fresh]);

        // An upload to the open job keeps its count current until the next rewrite.
        await using (var conn = await db.DataSource.OpenConnectionAsync())
        await using (var tx = await conn.BeginTransactionAsync())
        {
            await conn.ExecuteAsync("UPDATE jobs SET items_total = items_total + 2 WHERE id = @Id", new { Id = fresh }, tx);
            await bed.Lanes.PlaceAsync(conn, tx, fresh, ["text", "thumbnail"], default);
            await tx.CommitAsync();
        }
        Assert.Equal((6L, "smallest"), (await bed.ValuesByJobAsync())[fresh]);

        // The next rewrite puts it with everyone else, in the mode of its period.
        bed.AdvanceTo(OrderingMode.Oldest);
        await bed.Rewriter.RewriteAsync("test");
        values = await bed.ValuesByJobAsync();
        long[] ranks = [10000, 10005, 10010, 10015, 10020];
        Assert.Equal(ranks, new[] { a, b, late, later, fresh }.Select(j => values[j].Value));
    }
}
