using System.Net.Http.Json;
using System.Text.Json;
using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Local;
using Queue.Core.Ordering;

namespace Queue.Tests.Scheduler;

/// <summary>The real Queue.Scheduler processes, clustered on one database, with periods of a few seconds.</summary>
public sealed class SchedulerProcessTests
{
    private static readonly HttpClient Http = new() { Timeout = TimeSpan.FromSeconds(10) };

    private static ServiceProcess StartScheduler(FreshDatabase db, TimeSpan period, string rewriteMethod = OrderingOptions.Swap) =>
        ServiceProcess.Start("Queue.Scheduler", db.ConnectionString, new Dictionary<string, string>
        {
            ["Ordering__RewriteMethod"] = rewriteMethod,
            ["Ordering__Period"] = period.ToString("c", System.Globalization.CultureInfo.InvariantCulture),
            // Many slices per rewrite of these tests' 2,000 jobs, so a held lane stops the rewrite with others written.
            ["Ordering__RewriteSliceJobs"] = "100",
            // A dead node is noticed within seconds rather than the default 20.
            ["Scheduler__CheckinInterval"] = "00:00:01",
            ["Scheduler__CheckinMisfireThreshold"] = "00:00:03",
            ["Scheduler__IdleWaitTime"] = "00:00:01",
            ["Logging__LogLevel__Quartz"] = "Information",
        });

    [Fact]
    public async Task A_scheduler_logs_that_Quartz_started_and_serves_health_and_metrics()
    {
        await using var db = await FreshDatabase.CreateAsync();
        await using var scheduler = StartScheduler(db, TimeSpan.FromSeconds(20));
        await scheduler.WaitHealthyAsync();

        var health = await Http.GetFromJsonAsync<JsonElement>(new Uri(scheduler.Url + "/healthz"));
        Assert.Equal("ok", health.GetProperty("status").GetString());
        Assert.Equal(health.GetProperty("periodStart").GetDateTimeOffset().TimeOfDay.TotalSeconds % 40 == 0 ? "smallest" : "oldest",
            health.GetProperty("mode").GetString());
        await WaitForAsync(() => scheduler.Output.Contains("Quartz started", StringComparison.Ordinal), "the Quartz started log line");
        await WaitForAsync(async () => await RewriteCountAsync(db) >= 1, "the start-up rewrite");
        // The counter moves just after the rewrite commits, and a 20 s boundary may add a second rewrite meanwhile.
        var metrics = "";
        await WaitForAsync(async () =>
        {
            metrics = await Http.GetStringAsync(new Uri(scheduler.Url + "/metrics"));
            return Counted(metrics, "queue_ordering_rewrites_total") >= 1 && Counted(metrics, "queue_ordering_rewrite_duration_seconds_count") >= 1;
        }, "the rewrite in the Scheduler's metrics");
        foreach (var series in new[] { "queue_ordering_jobs_ranked 0", "queue_ordering_mode{mode=\"smallest\"}", "queue_ordering_mode{mode=\"oldest\"}" })
        {
            Assert.Contains(series, metrics, StringComparison.Ordinal);
        }
    }

    [Fact]
    public async Task Two_scheduler_processes_rewrite_each_period_exactly_once()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, DateTimeOffset.UtcNow);
        var tenant = await db.NewTenantAsync();
        for (var i = 0; i < 5; i++)
        {
            await bed.NewJobAsync(tenant, i + 1);
        }
        var period = TimeSpan.FromSeconds(2);
        await using var a = StartScheduler(db, period);
        await using var b = StartScheduler(db, period);
        await Task.WhenAll(a.WaitHealthyAsync(), b.WaitHealthyAsync());
        var from = DateTime.UtcNow;
        // The scenario itself: two schedulers side by side for five 2 s periods (four logged at least), then every period is checked.
        await Eventually.HoldsAsync(async () =>
        {
            await using var c = await db.DataSource.OpenConnectionAsync();
            return await c.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM rewrite_log WHERE period_start >= @From", new { From = from }) >= 4;
        }, TimeSpan.FromSeconds(10), TimeSpan.FromMilliseconds(250));

        await using var conn = await db.DataSource.OpenConnectionAsync();
        var log = (await conn.QueryAsync<(DateTime PeriodStart, string Mode, int JobsRanked, string Instance)>(
            "SELECT period_start, mode, jobs_ranked, instance FROM rewrite_log WHERE period_start >= @From ORDER BY period_start",
            new { From = from })).AsList();
        Assert.True(log.Count >= 4, $"expected a rewrite every 2 s, got {log.Count}");
        Assert.Equal(log.Count, log.Select(l => l.PeriodStart).Distinct().Count());
        for (var i = 1; i < log.Count; i++)
        {
            Assert.Equal(period, log[i].PeriodStart - log[i - 1].PeriodStart); // no period skipped
        }
        Assert.All(log, l =>
        {
            var index = (long)(l.PeriodStart.TimeOfDay.Ticks / period.Ticks);
            Assert.Equal(index % 2 == 0 ? "smallest" : "oldest", l.Mode);
            Assert.Equal(5, l.JobsRanked);
        });
        var instances = (await Task.WhenAll(InstanceAsync(a), InstanceAsync(b))).ToHashSet();
        Assert.All(log, l => Assert.Contains(l.Instance, instances));
    }

    [Fact]
    public async Task After_a_kill_9_of_one_of_two_schedulers_the_other_rewrites_every_later_period_exactly_once()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var period = TimeSpan.FromSeconds(2);
        await using var a = StartScheduler(db, period);
        await using var b = StartScheduler(db, period);
        await Task.WhenAll(a.WaitHealthyAsync(), b.WaitHealthyAsync());
        var (ia, ib) = (await InstanceAsync(a), await InstanceAsync(b));
        // Kill whichever wrote the latest rewrite: the active one.
        string active = "";
        await WaitForAsync(async () =>
        {
            await using var c = await db.DataSource.OpenConnectionAsync();
            active = await c.ExecuteScalarAsync<string?>("SELECT instance FROM rewrite_log ORDER BY period_start DESC LIMIT 1") ?? "";
            return active.Length > 0;
        }, "a first rewrite");
        var (victim, survivor) = active == ia ? (a, ib) : (b, ia);
        victim.Kill();
        var killedAt = DateTime.UtcNow;
        await WaitForAsync(async () => await RewriteCountByAsync(db, survivor, killedAt) >= 4, "four rewrites by the survivor", seconds: 40);

        await using var conn = await db.DataSource.OpenConnectionAsync();
        var rows = (await conn.QueryAsync<(DateTime PeriodStart, DateTime StartedAt, string Instance)>(
            "SELECT period_start, started_at, instance FROM rewrite_log ORDER BY period_start")).AsList();
        var log = rows.Select(r => r.PeriodStart).ToList();
        // On a failure, say what happened: every rewrite, when it started and who ran it, and the survivor's own log.
        var story = $"killed {(active == ia ? "a" : "b")} at {killedAt:HH:mm:ss.fff}; rewrites:\n" +
            string.Join("\n", rows.Select(r => $"  {r.PeriodStart:HH:mm:ss.fff} started {r.StartedAt:HH:mm:ss.fff} by {r.Instance}")) +
            $"\nsurvivor's output:\n{(victim == a ? b : a).Output}";
        Assert.True(log.Count == log.Distinct().Count(), "a period was rewritten twice: " + story);
        var after = log.Where(p => p >= killedAt - period).ToList();
        for (var i = 1; i < after.Count; i++)
        {
            Assert.True(after[i] - after[i - 1] == period, $"a period was skipped across the kill: {story}");
        }
    }

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

    [Fact]
    public async Task After_a_kill_9_in_the_middle_of_a_rewrite_the_ordering_is_consistent_and_the_next_run_completes()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, DateTimeOffset.UtcNow);
        var tenant = await db.NewTenantAsync();
        await bed.BulkJobsAsync(tenant, 2000);
        var lanes = await bed.LanesAsync();
        var (firstJob, lastJob) = (lanes.Min(l => l.JobId), lanes.Max(l => l.JobId));
        var period = TimeSpan.FromSeconds(6);

        await using var first = StartScheduler(db, period, OrderingOptions.InPlace);
        await first.WaitHealthyAsync();
        await WaitForAsync(async () => await RewriteCountAsync(db) >= 1, "the start-up rewrite");

        // Hold the oldest job's lane, so the next boundary's rewrite stops inside its UPDATE with other lanes locked. The
        // rewrite writes the head of the claim order last: in oldest-first order that is the oldest job, and in
        // smallest-first order (1 + n % 7 items) the oldest job (2 items) comes after the newest (6 items).
        await using var holder = await db.DataSource.OpenConnectionAsync();
        var hold = await holder.BeginReadCommittedAsync(default);
        await holder.ExecuteAsync("SELECT * FROM ordering WHERE job_id = @Id FOR UPDATE", new { Id = firstJob }, hold);
        var before = await ConsistentOrderingAsync(db);
        Assert.True(before.Consistent);
        if (!await Eventually.HoldsAsync(() => LaneIsLockedAsync(db, lastJob), TimeSpan.FromSeconds(30)))
        {
            // Seen once in about 30 runs; what the server and the scheduler were doing names the cause next time.
            Assert.Fail("timed out waiting until the boundary rewrite reached its UPDATE\n" + await ServerActivityAsync(db) + "\nscheduler output:\n" + first.Output);
        }
        first.Kill();

        // Half-way or not, the ordering claimers see is the last committed one.
        Assert.Equal(before, await ConsistentOrderingAsync(db));
        await hold.CommitAsync();
        // The dead client's transaction is rolled back by the server, never committed.
        await WaitForAsync(async () => !await LaneIsLockedAsync(db, lastJob), "the killed rewrite to be rolled back");
        Assert.Equal(before, await ConsistentOrderingAsync(db));
        var rewritesBefore = await RewriteCountAsync(db);

        await using var second = StartScheduler(db, period, OrderingOptions.InPlace);
        await second.WaitHealthyAsync();
        await WaitForAsync(async () => await RewriteCountAsync(db) > rewritesBefore, "the next rewrite", seconds: 30);
        var after = await ConsistentOrderingAsync(db);
        Assert.Equal(2000, after.Ranked);
        Assert.True(after.Consistent, "every lane carries its value in the logged mode");
    }

    [Fact]
    public async Task After_a_kill_9_in_the_middle_of_a_swap_rewrite_the_old_ordering_stands_and_the_next_run_removes_its_leftovers()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, DateTimeOffset.UtcNow);
        var tenant = await db.NewTenantAsync();
        await bed.BulkJobsAsync(tenant, 2000);
        var period = TimeSpan.FromSeconds(6);

        await using var first = StartScheduler(db, period);
        await first.WaitHealthyAsync();
        await WaitForAsync(async () => await RewriteCountAsync(db) >= 1, "the start-up rewrite");

        // An open transaction that wrote a lane holds ordering, so the boundary's swap has made ordering_next and then
        // waits to put its triggers on ordering: kill it there.
        await using var holder = await db.DataSource.OpenConnectionAsync();
        var hold = await holder.BeginReadCommittedAsync(default);
        await holder.ExecuteAsync("UPDATE ordering SET updated_at = updated_at WHERE job_id = (SELECT MIN(job_id) FROM jobs)", transaction: hold);
        var before = await ConsistentOrderingAsync(db);
        Assert.True(before.Consistent);
        await WaitForAsync(async () => await TableCountAsync(db, "ordering_next") == 1, "the boundary swap to make ordering_next", seconds: 30);
        first.Kill();
        await hold.CommitAsync();

        Assert.Equal(before, await ConsistentOrderingAsync(db));
        var rewritesBefore = await RewriteCountAsync(db);
        await using var second = StartScheduler(db, period);
        await second.WaitHealthyAsync();
        await WaitForAsync(async () => await RewriteCountAsync(db) > rewritesBefore, "the next rewrite", seconds: 30);
        var after = await ConsistentOrderingAsync(db);
        Assert.Equal(2000, after.Ranked);
        Assert.True(after.Consistent, "every lane carries its value in the logged mode");
        Assert.Equal(0, await TableCountAsync(db, "ordering_retired"));
        await using var conn = await db.DataSource.OpenConnectionAsync();
        Assert.Equal(0L, await conn.ExecuteScalarAsync<long>("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()"));
    }

    /// <summary>The server's sessions and the rewrite log, for a failure message.</summary>
    private static async Task<string> ServerActivityAsync(FreshDatabase db)
    {
        await using var conn = await db.DataSource.OpenConnectionAsync();
        var sessions = await conn.QueryAsync<(long Id, string? Command, long Time, string? State, string? Info)>(
            "SELECT ID, COMMAND, TIME, STATE, LEFT(INFO, 200) FROM information_schema.PROCESSLIST WHERE COMMAND <> 'Sleep'");
        var log = await conn.QueryAsync<(DateTime Period, string Mode, DateTime Finished)>("SELECT period_start, mode, finished_at FROM rewrite_log ORDER BY id");
        return "sessions:\n" + string.Join("\n", sessions) + "\nrewrite_log:\n" + string.Join("\n", log);
    }

    private static async Task<long> TableCountAsync(FreshDatabase db, string table)
    {
        await using var conn = await db.DataSource.OpenConnectionAsync();
        return await conn.ExecuteScalarAsync<long>(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = @Table", new { Table = table });
    }

    private sealed record OrderingState(string? Mode, int Ranked, long Lanes, bool Consistent, string Values);

    /// <summary>
    /// The ordering and the last rewrite_log row, read in one snapshot: whether every lane holds exactly the value
    /// of that rewrite's mode (smallest: the job's remaining items; oldest: 10000 + 5 * rank by job id).
    /// </summary>
    private static async Task<OrderingState> ConsistentOrderingAsync(FreshDatabase db)
    {
        await using var conn = await db.DataSource.OpenConnectionAsync();
        await conn.ExecuteAsync("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
        await conn.ExecuteAsync("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY");
        var last = await conn.QueryFirstOrDefaultAsync<(string Mode, int Ranked)?>("SELECT mode, jobs_ranked FROM rewrite_log ORDER BY id DESC LIMIT 1");
        var rows = (await conn.QueryAsync<(long JobId, long Value, string Mode, long Remaining)>($"""
            SELECT o.job_id, {LaneValueSql.Shown}, o.mode, j.items_total - j.items_done - j.items_dead - j.items_cancelled
            FROM ordering o JOIN jobs j ON j.id = o.job_id ORDER BY o.job_id
            """)).AsList();
        await conn.ExecuteAsync("COMMIT");
        var consistent = last is { } l && rows.Select((r, rank) => r.Mode == l.Mode
            && r.Value == (l.Mode == "smallest" ? r.Remaining : 10000 + (5 * rank))).All(ok => ok);
        return new OrderingState(last?.Mode, last?.Ranked ?? 0, rows.Count, consistent,
            string.Join(',', rows.Select(r => r.Value)));
    }

    private static async Task<bool> LaneIsLockedAsync(FreshDatabase db, long jobId)
    {
        await using var conn = await db.DataSource.OpenConnectionAsync();
        await using var tx = await conn.BeginReadCommittedAsync(default);
        try
        {
            await conn.ExecuteAsync("SELECT job_id FROM ordering WHERE job_id = @Id FOR UPDATE NOWAIT", new { Id = jobId }, tx);
            return false;
        }
        catch (MySqlException ex) when (ex.ErrorCode == MySqlErrorCode.LockWaitTimeout)
        {
            return true;
        }
    }

    private static async Task<int> RewriteCountAsync(FreshDatabase db, DateTime? periodStart = null)
    {
        await using var conn = await db.DataSource.OpenConnectionAsync();
        return periodStart is { } p
            ? await conn.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM rewrite_log WHERE period_start = @P", new { P = p })
            : await conn.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM rewrite_log");
    }

    private static async Task<bool> TriggerExistsAsync(FreshDatabase db, string name)
    {
        await using var conn = await db.DataSource.OpenConnectionAsync();
        return await conn.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM QRTZ_TRIGGERS WHERE TRIGGER_NAME = @Name", new { Name = name }) > 0;
    }

    private static async Task<int> RewriteCountByAsync(FreshDatabase db, string instance, DateTime from)
    {
        await using var conn = await db.DataSource.OpenConnectionAsync();
        return await conn.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM rewrite_log WHERE instance = @Instance AND period_start >= @From",
            new { Instance = instance, From = from });
    }

    private static async Task<string> InstanceAsync(ServiceProcess p) =>
        (await Http.GetFromJsonAsync<JsonElement>(new Uri(p.Url + "/healthz"))).GetProperty("instance").GetString()!;

    private static async Task WaitUntilAsync(DateTime utc)
    {
        var wait = utc - DateTime.UtcNow;
        if (wait > TimeSpan.Zero)
        {
            await Task.Delay(wait);
        }
    }

    private static Task WaitForAsync(Func<bool> condition, string what, int seconds = 20) =>
        WaitForAsync(() => Task.FromResult(condition()), what, seconds);

    private static Task WaitForAsync(Func<Task<bool>> condition, string what, int seconds = 20) => Eventually.UntilAsync(condition, what, seconds);

    private static double Counted(string metrics, string series)
    {
        var line = metrics.Split('\n').FirstOrDefault(l => l.StartsWith(series + " ", StringComparison.Ordinal));
        return line is null ? 0 : double.Parse(line[(series.Length + 1)..], System.Globalization.CultureInfo.InvariantCulture);
    }
}
