using System.Diagnostics;
using System.Globalization;
using Dapper;
using Queue.Bench.Harness;
using Queue.Bench.Sql;
using Queue.Core.Sql;

namespace Queue.Bench;

/// <summary>
/// Status reads under a deep queue: 10M items (1,000 jobs x 2,000 documents x 5 tasks) seeded set-based, then
/// GET /jobs/{id} for random jobs over 4 keep-alive connections (a few dashboards and scripts polling) (wrk). Target: p99 under 10 ms.
/// </summary>
public static class StatusBench
{
    private const int Connections = 4;

    public static async Task<int> RunAsync(string[] args)
    {
        var duration = TimeSpan.FromSeconds(args.Length > 0 ? int.Parse(args[0], CultureInfo.InvariantCulture) : 30);
        await using var env = await BenchEnvironment.StartAsync();
        await using var db = SubmitBenchKit.DataSource(env);
        var (tenant, key) = await SubmitBenchKit.CustomerAsync(db, "status", ["a", "b", "c", "d", "e"]);
        var seed = Stopwatch.StartNew();
        long first, last, items;
        await using (var conn = await db.OpenConnectionAsync())
        {
            var now = DateTime.UtcNow;
            var args0 = new { TenantId = tenant.Id, Now = now };
            await conn.ExecuteAsync(new CommandDefinition(BenchSeedSql.Jobs1000, args0, commandTimeout: 600));
            (first, last) = await conn.QuerySingleAsync<(long, long)>(new CommandDefinition(BenchSeedSql.JobRange, args0));
            // 50 jobs (500k items) per statement: big enough to be set-based, small enough for the undo log.
            for (var from = first; from <= last; from += 50)
            {
                var range = new { TenantId = tenant.Id, Now = now, FromJob = from, ToJob = Math.Min(last, from + 49), LeaseUntil = now.AddHours(6) };
                await conn.ExecuteAsync(new CommandDefinition(BenchSeedSql.Documents, range, commandTimeout: 600));
                await conn.ExecuteAsync(new CommandDefinition(BenchSeedSql.Items, range, commandTimeout: 600));
            }
            await conn.ExecuteAsync(new CommandDefinition(BenchSeedSql.Lanes, new { TenantId = tenant.Id, Now = now, FirstJob = first }, commandTimeout: 600));
            items = await conn.ExecuteScalarAsync<long>(new CommandDefinition(BenchSeedSql.CountItems, commandTimeout: 600));
        }
        Console.WriteLine($"status: seeded {items:N0} items in {last - first + 1:N0} jobs in {seed.Elapsed.TotalSeconds:F0} s");
        var api = await env.StartServiceAsync();
        Console.WriteLine($"status: GET /jobs/{{id}} for random jobs, {Connections} keep-alive connections (wrk), {duration.TotalSeconds:F0} s");
        var script = $$"""
            local headers = { ["Authorization"] = "Bearer {{key}}" }
            init = function(args) math.randomseed(os.time() + math.random(1000)) end
            request = function()
              return wrk.format("GET", "/jobs/" .. math.random({{first}}, {{last}}), headers)
            end
            """;
        await Wrk.RunAsync(api.Url, script, Connections, 1, TimeSpan.FromSeconds(5)); // warm-up
        WrkResult result;
        long peak;
        await using (var rss = new RssSampler(api.RssBytes))
        {
            result = await Wrk.RunAsync(api.Url, script, Connections, 1, duration);
            peak = rss.Peak;
        }
        Console.WriteLine();
        Report.Row("GET /jobs/{id} (10M items queued)", result.RequestsPerSecond, result.P50Ms, result.P99Ms, peak);
        if (result.Non2xx > 0 || result.SocketErrors > 0)
        {
            Console.WriteLine($"  non-2xx answers: {result.Non2xx}, socket errors: {result.SocketErrors}");
        }
        var report = new Report();
        report.Target("status-p99", result.P99Ms.ToString("F2", CultureInfo.InvariantCulture) + " ms", "< 10 ms with 10M items queued",
            result.P99Ms < 10 && result.Non2xx == 0 && items >= 10_000_000);
        return report.Finish();
    }
}
