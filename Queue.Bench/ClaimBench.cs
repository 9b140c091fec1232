using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Http.Headers;
using System.Text;
using System.Text.Json;
using Dapper;
using HdrHistogram;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Bench.Harness;
using Queue.Core.Claims;
using Queue.Core.Data;
using Queue.Local;
using Queue.Core.Security;
using Queue.Bench.Sql;
using Queue.Core.Sql;

namespace Queue.Bench;

/// <summary>
/// <c>claim</c>: (1) the raw claim transaction through MySqlConnector (the real Core claim code, one item per
/// transaction, no HTTP) at 1/16/64 claimers: the database's limit; (2) POST /next over keep-alive HTTP, one item per
/// call, each completed, at 1/16/64 workers, with Queue.Api's RSS; (3) (2) at 64 workers with 10k and with 10M items
/// queued. Options: <c>--seconds N</c> per phase (default 5), <c>--big N</c> items for the big queue (default 10M),
/// <c>--api-env KEY=VALUE</c> (repeatable) for Queue.Api's environment.
/// </summary>
public static class ClaimBench
{
    private static readonly int[] Concurrency = [1, 16, 64];

    /// <summary>Alternating rounds of the 10k and the big queue (odd, so the median is a measured figure).</summary>
    private const int Rounds = 3;

    public static async Task<int> RunAsync(string[] args)
    {
        var seconds = Arg(args, "--seconds", 5);
        var big = Arg(args, "--big", 10_000_000);
        var report = new Report();
        await using var env = await BenchEnvironment.StartAsync();
        await using var db = new MySqlDataSourceBuilder(QueueDatabase.Normalize(env.ConnectionString)).Build();
        var tenants = new TenantService(db, TimeProvider.System);
        var tenant = await tenants.CreateAsync("bench", new TenantSettings(["bench"]), default);
        var key = (await new ApiKeyService(db, TimeProvider.System, Options.Create(new AuthOptions())).IssueAsync(KeyRole.Worker, null, "bench", default)).Secret;

        Console.WriteLine($"seeding: raw and http lanes (1,000 and 10,000 items per job), 10k queue");
        foreach (var n in Concurrency)
        {
            await SeedAsync(db, tenant.Id, $"raw-{n}", jobs: n == 1 ? 10 : 60, perJob: 1000);
        }
        await SeedAsync(db, tenant.Id, "http", jobs: 40, perJob: 10_000);
        await SeedAsync(db, tenant.Id, "q10k", jobs: 10, perJob: 1000);
        for (var round = 0; round < Rounds; round++)
        {
            await SeedAsync(db, tenant.Id, $"q10k-{round}", jobs: 10, perJob: 1000);
        }

        // Figure 1: the raw claim transaction. Every claim leases one item in its own READ COMMITTED transaction.
        var engine = new ClaimEngine(db, new SeedLaneSelector(), TimeProvider.System, new ClaimCounters());
        var raw = new Dictionary<int, (double Rate, HistogramBase Latency)>();
        foreach (var n in Concurrency)
        {
            raw[n] = await RawAsync(engine, $"raw-{n}", n, TimeSpan.FromSeconds(seconds));
            Report.Row($"(1) raw SQL claim, {n} claimers", raw[n].Rate, raw[n].Latency, 0, "claims/s");
        }

        // Figure 2: the same work through Queue.Api, each item claimed with POST /next (max 1) and completed.
        // --api-env K=V (repeatable) passes settings to Queue.Api, e.g. to compare GC or claim-ahead settings.
        // The runtime knobs are read from the environment only; run.sh sets the same (BenchEnvironment.ApiRuntimeSettings).
        var apiEnv = BenchEnvironment.ApiRuntimeSettings();
        for (var i = 0; i + 1 < args.Length; i++)
        {
            if (args[i] == "--api-env" && args[i + 1].Split('=', 2) is [var k, var v])
            {
                apiEnv[k] = v;
            }
        }
        var api = await env.StartServiceAsync("Queue.Api", apiEnv);
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"Queue.Api idle RSS {api.RssBytes() / 1048576.0:F0} MB {string.Join(' ', apiEnv.Select(e => e.Key + "=" + e.Value))}"));
        using var http = new HttpClient(new SocketsHttpHandler { MaxConnectionsPerServer = 512, PooledConnectionIdleTimeout = TimeSpan.FromMinutes(5) })
        {
            BaseAddress = new Uri(api.Url),
            Timeout = TimeSpan.FromSeconds(60),
        };
        http.DefaultRequestHeaders.Authorization = new AuthenticationHeaderValue("Bearer", key);
        await HttpAsync(http, "http", 4, TimeSpan.FromSeconds(1), int.MaxValue); // warm-up: JIT, pools, key cache
        var viaHttp = new Dictionary<int, (double Rate, HistogramBase Latency)>();
        long rss = 0;
        foreach (var n in Concurrency)
        {
            await using var sampler = new RssSampler(api.RssBytes);
            viaHttp[n] = await HttpAsync(http, "http", n, TimeSpan.FromSeconds(seconds), int.MaxValue);
            rss = Math.Max(rss, sampler.Peak);
            Report.Row($"(2) POST /next + complete, {n} workers", viaHttp[n].Rate, viaHttp[n].Latency, sampler.Peak, "items/s");
        }

        // Figure 3: the same at 64 workers against a small and a very large queue.
        const int Measured = 6000;
        var small = await HttpAsync(http, "q10k", 64, TimeSpan.FromSeconds(60), Measured);
        Report.Row("(3) 64 workers, 10k queued", small.Rate, small.Latency, api.RssBytes(), "items/s");
        var seedWatch = Stopwatch.StartNew();
        Console.WriteLine($"seeding: {big:N0} items in {big / 10_000:N0} jobs of 10,000");
        await SeedAsync(db, tenant.Id, "q10m", jobs: big / 10_000, perJob: 10_000);
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"seeded in {seedWatch.Elapsed.TotalSeconds:F0} s"));
        // The load's purge runs for minutes after it commits; measured inside it, the big queue's figure was the
        // aftershock's. Wait until purge has caught up, then measure a fresh 10k queue and the big one alternately,
        // Rounds times each, and compare medians: single figures drift by +-10 % here, the size of the goal's margin.
        await SettleAsync(db, TimeSpan.FromMinutes(5));
        var tens = new List<double>();
        var bigs = new List<double>();
        for (var round = 0; round < Rounds; round++)
        {
            var ten = await HttpAsync(http, $"q10k-{round}", 64, TimeSpan.FromSeconds(60), Measured);
            Report.Row($"(3) 64 workers, 10k queued, round {round + 1}", ten.Rate, ten.Latency, api.RssBytes(), "items/s");
            var large = await HttpAsync(http, "q10m", 64, TimeSpan.FromSeconds(60), Measured);
            Report.Row($"(3) 64 workers, {big / 1_000_000.0:0.#}M queued, round {round + 1}", large.Rate, large.Latency, api.RssBytes(), "items/s");
            tens.Add(ten.Rate);
            bigs.Add(large.Rate);
        }
        var (tenMedian, bigMedian) = (tens.Order().ElementAt(Rounds / 2), bigs.Order().ElementAt(Rounds / 2));

        var ratio = viaHttp[64].Rate / raw[64].Rate;
        report.Target("http64-vs-raw64", string.Create(CultureInfo.InvariantCulture, $"{ratio:F2}x ({viaHttp[64].Rate:F0} vs {raw[64].Rate:F0}/s)"), ">= 1.0x", ratio >= 1.0);
        var p99Http = Report.P(viaHttp[64].Latency, 99);
        var p99Raw = Report.P(raw[64].Latency, 99);
        report.Target("http64-p99", string.Create(CultureInfo.InvariantCulture, $"{p99Http:F1} ms vs raw {p99Raw:F1} ms"), "<= raw p99", p99Http <= p99Raw);
        var scale = bigMedian / tenMedian;
        report.Target("10M-vs-10k", string.Create(CultureInfo.InvariantCulture,
            $"{scale:F2}x (medians of {Rounds} alternating rounds: {bigMedian:F0} vs {tenMedian:F0}/s; 10k before the load {small.Rate:F0}/s)"), ">= 0.9x", scale >= 0.9);
        report.Target("api-rss", string.Create(CultureInfo.InvariantCulture, $"{rss / 1048576.0:F0} MB"), "<= 120 MB", rss <= 120L * 1048576);
        return report.Finish();
    }

    /// <summary>Waits until purge has caught up with the seeding (or <paramref name="cap"/> passed); dirty pages are printed, not awaited (flushing millions of them takes longer than the run).</summary>
    private static async Task SettleAsync(MySqlDataSource db, TimeSpan cap)
    {
        var (waited, history, dirty) = await Purge.UntilHistoryBelowAsync(db, 1000, cap, TimeSpan.FromSeconds(1));
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"settled in {waited.TotalSeconds:F0} s (history list {history:N0}, dirty pages {dirty:N0})"));
    }

    private static async Task SeedAsync(MySqlDataSource db, long tenantId, string task, int jobs, int perJob)
    {
        var now = DateTime.UtcNow;
        await using var conn = await db.OpenConnectionAsync();
        await conn.ExecuteAsync(new CommandDefinition(ClaimBenchSql.SeedJobs, new { TenantId = tenantId, Task = task, Jobs = jobs, PerJob = perJob, Now = now }, commandTimeout: 600));
        var (first, last) = await conn.QuerySingleAsync<(long First, long Last)>(ClaimBenchSql.JobRange, new { Task = task });
        await conn.ExecuteAsync(new CommandDefinition(ClaimBenchSql.SeedDocuments, new { First = first, Last = last, Now = now }, commandTimeout: 600));
        // Chunks of about 500k rows, so no single transaction grows a huge undo log.
        var step = Math.Max(1, 500_000 / perJob);
        for (var j = first; j <= last; j += step)
        {
            await conn.ExecuteAsync(new CommandDefinition(ClaimBenchSql.SeedItems,
                new { Task = task, PerJob = perJob, First = j, Last = Math.Min(last, j + step - 1), Now = now }, commandTimeout: 600));
        }
        await conn.ExecuteAsync(new CommandDefinition(ClaimBenchSql.SeedLanes, new { Task = task, First = first, Last = last, Now = now }, commandTimeout: 600));
    }

    private static async Task<(double Rate, HistogramBase Latency)> RawAsync(ClaimEngine engine, string task, int claimers, TimeSpan duration)
    {
        var latency = Report.NewHistogram();
        long claims = 0;
        string[] tasks = [task];
        var watch = Stopwatch.StartNew();
        await Task.WhenAll(Enumerable.Range(0, claimers).Select(_ => Task.Run(async () =>
        {
            while (watch.Elapsed < duration)
            {
                var t0 = Stopwatch.GetTimestamp();
                await RawClaim.OnceAsync(engine, tasks, "raw");
                Report.Record(latency, t0);
                Interlocked.Increment(ref claims);
            }
        })));
        return (claims / watch.Elapsed.TotalSeconds, latency);
    }

    private static async Task<(double Rate, HistogramBase Latency)> HttpAsync(HttpClient http, string task, int workers, TimeSpan duration, int limit)
    {
        var latency = Report.NewHistogram();
        long done = 0;
        var watch = Stopwatch.StartNew();
        await Task.WhenAll(Enumerable.Range(0, workers).Select(w => Task.Run(async () =>
        {
            var body = Encoding.UTF8.GetBytes($"{{\"worker\":\"bench-{w}\",\"tasks\":[\"{task}\"],\"max\":1}}");
            while (watch.Elapsed < duration && Interlocked.Read(ref done) < limit)
            {
                var t0 = Stopwatch.GetTimestamp();
                using var next = new ByteArrayContent(body);
                next.Headers.ContentType = new MediaTypeHeaderValue("application/json");
                using var r = await http.PostAsync(new Uri("/next", UriKind.Relative), next);
                if (r.StatusCode == HttpStatusCode.NoContent)
                {
                    throw new InvalidOperationException($"the {task} queue ran dry: seed more");
                }
                if (r.StatusCode != HttpStatusCode.OK)
                {
                    throw new InvalidOperationException($"/next answered {(int)r.StatusCode}: {await r.Content.ReadAsStringAsync()}");
                }
                long id;
                string token;
                using (var json = await JsonDocument.ParseAsync(await r.Content.ReadAsStreamAsync()))
                {
                    var item = json.RootElement.GetProperty("items")[0];
                    id = item.GetProperty("id").GetInt64();
                    token = item.GetProperty("leaseToken").GetString()!;
                }
                Report.Record(latency, t0);
                using var complete = new ByteArrayContent(Encoding.UTF8.GetBytes($"{{\"leaseToken\":\"{token}\"}}"));
                complete.Headers.ContentType = new MediaTypeHeaderValue("application/json");
                using var c = await http.PostAsync(new Uri($"/items/{id}/complete", UriKind.Relative), complete);
                if (c.StatusCode != HttpStatusCode.NoContent)
                {
                    throw new InvalidOperationException($"complete answered {(int)c.StatusCode}: {await c.Content.ReadAsStringAsync()}");
                }
                Interlocked.Increment(ref done);
            }
        })));
        return (done / watch.Elapsed.TotalSeconds, latency);
    }

    private static int Arg(string[] args, string name, int fallback)
    {
        var i = Array.IndexOf(args, name);
        return i >= 0 && i + 1 < args.Length ? int.Parse(args[i + 1], CultureInfo.InvariantCulture) : fallback;
    }
}
