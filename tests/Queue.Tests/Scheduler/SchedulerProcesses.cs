using System.Net.Http.Json;
using System.Text.Json;
using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Local;
using Queue.Core.Ordering;

namespace Queue.Tests.Scheduler;

/// <summary>Starting real Queue.Scheduler processes with periods of a few seconds, and reading what they did.</summary>
internal static class SchedulerProcesses
{
    public static readonly HttpClient Http = new() { Timeout = TimeSpan.FromSeconds(10) };

    public static ServiceProcess StartScheduler(FreshDatabase db, TimeSpan period, string rewriteMethod = OrderingOptions.Swap) =>
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

    /// <summary>The server's sessions and the rewrite log, for a failure message.</summary>
    public static async Task<string> ServerActivityAsync(FreshDatabase db)
    {
        await using var conn = await db.DataSource.OpenConnectionAsync();
        var sessions = await conn.QueryAsync<(long Id, string? Command, long Time, string? State, string? Info)>(
            "SELECT ID, COMMAND, TIME, STATE, LEFT(INFO, 200) FROM information_schema.PROCESSLIST WHERE COMMAND <> 'Sleep'");
        var log = await conn.QueryAsync<(DateTime Period, string Mode, DateTime Finished)>("SELECT period_start, mode, finished_at FROM rewrite_log ORDER BY id");
        return "sessions:\n" + string.Join("\n", sessions) + "\nrewrite_log:\n" + string.Join("\n", log);
    }

    public static async Task<long> TableCountAsync(FreshDatabase db, string table)
    {
        await using var conn = await db.DataSource.OpenConnectionAsync();
        return await conn.ExecuteScalarAsync<long>(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = @Table", new { Table = table });
    }

    public sealed record OrderingState(string? Mode, int Ranked, long Lanes, bool Consistent, string Values);

    /// <summary>
    /// The ordering and the last rewrite_log row, read in one snapshot: whether every lane holds exactly the value
    /// of that rewrite's mode (smallest: the job's remaining items; oldest: 10000 + 5 * rank by job id).
    /// </summary>
    public static async Task<OrderingState> ConsistentOrderingAsync(FreshDatabase db)
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

    public static async Task<bool> LaneIsLockedAsync(FreshDatabase db, long jobId)
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

    public static async Task<int> RewriteCountAsync(FreshDatabase db, DateTime? periodStart = null)
    {
        await using var conn = await db.DataSource.OpenConnectionAsync();
        return periodStart is { } p
            ? await conn.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM rewrite_log WHERE period_start = @P", new { P = p })
            : await conn.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM rewrite_log");
    }

    public static async Task<bool> TriggerExistsAsync(FreshDatabase db, string name)
    {
        await using var conn = await db.DataSource.OpenConnectionAsync();
        return await conn.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM QRTZ_TRIGGERS WHERE TRIGGER_NAME = @Name", new { Name = name }) > 0;
    }

    public static async Task<int> RewriteCountByAsync(FreshDatabase db, string instance, DateTime from)
    {
        await using var conn = await db.DataSource.OpenConnectionAsync();
        return await conn.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM rewrite_log WHERE instance = @Instance AND period_start >= @From",
            new { Instance = instance, From = from });
    }

    /// <summary>The rewrites a Scheduler finished: counted after the whole rewrite, its move into the band after the commit included.</summary>
    public static async Task<double> FinishedRewritesAsync(ServiceProcess p) =>
        Counted(await Http.GetStringAsync(new Uri(p.Url + "/metrics")), "queue_ordering_rewrites_total");

    public static async Task<string> InstanceAsync(ServiceProcess p) =>
        (await Http.GetFromJsonAsync<JsonElement>(new Uri(p.Url + "/healthz"))).GetProperty("instance").GetString()!;

    public static async Task WaitUntilAsync(DateTime utc)
    {
        var wait = utc - DateTime.UtcNow;
        if (wait > TimeSpan.Zero)
        {
            await Task.Delay(wait);
        }
    }

    public static Task WaitForAsync(Func<bool> condition, string what, int seconds = 20) =>
        WaitForAsync(() => Task.FromResult(condition()), what, seconds);

    public static Task WaitForAsync(Func<Task<bool>> condition, string what, int seconds = 20) => Eventually.UntilAsync(condition, what, seconds);

    public static double Counted(string metrics, string series)
    {
        var line = metrics.Split('\n').FirstOrDefault(l => l.StartsWith(series + " ", StringComparison.Ordinal));
        return line is null ? 0 : double.Parse(line[(series.Length + 1)..], System.Globalization.CultureInfo.InvariantCulture);
    }
}
