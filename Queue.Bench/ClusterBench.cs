using System.Collections.Concurrent;
using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Http.Headers;
using System.Net.Http.Json;
using System.Text.Json;
using Dapper;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Bench.Harness;
using Queue.Core.Data;
using Queue.Core.Jobs;
using Queue.Core.Security;
using Queue.Local;

namespace Queue.Bench;

/// <summary>
/// <c>cluster</c>: the cluster of scripts/cluster.sh (GTID primary and replica, three Api processes with the tenant-fair
/// policy behind HAProxy) and the figures of docs/DESIGN.md "Scaling out": a tenant's rate limit across the three
/// processes, the wake-up of a worker waiting on one process for work submitted through another, Jain's index of the
/// tenant-fair policy with workers spread over the three, and the drain rate through the balancer. Options:
/// <c>--items N</c> (3,000 per tenant), <c>--rate R</c> (60 requests/s).
/// </summary>
public static class ClusterBench
{
    private const string FairTask = "fair";
    private const int ApiCount = 3;
    private static readonly string[] WakeTasks = ["wake"];

    public static async Task<int> RunAsync(string[] args)
    {
        var items = int.Parse(BenchArgs.Option(args, "--items") ?? "3000", CultureInfo.InvariantCulture);
        var rate = int.Parse(BenchArgs.Option(args, "--rate") ?? "60", CultureInfo.InvariantCulture);
        var report = new Report();
        await using var db = await ReplicatedMariaDb.StartEphemeralAsync();
        var primary = await db.Primary.CreateDatabaseAsync("bench");
        await Migrations.ApplyAsync(primary, NullLogger.Instance);
        await db.WaitCaughtUpAsync(TimeSpan.FromSeconds(60));
        await using var source = new MySqlDataSourceBuilder(QueueDatabase.Normalize(primary)).Build();
        var keys = new ApiKeyService(source, TimeProvider.System, Options.Create(new AuthOptions()));
        var tenants = new TenantService(source, TimeProvider.System);
        async Task<string> CustomerAsync(string name, TenantSettings settings) =>
            (await keys.IssueAsync(KeyRole.Customer, (await tenants.CreateAsync(name, settings, default)).Id, "bench", default)).Secret;
        var workerKey = (await keys.IssueAsync(KeyRole.Worker, null, "bench", default)).Secret;

        var settings = new Dictionary<string, string>
        {
            ["ConnectionStrings__QueueRead"] = db.Replica.ConnectionStringFor("bench"),
            ["Ordering__Policy"] = "tenant-fair",
            ["Cluster__HeartbeatSeconds"] = "1",
            ["Cluster__NodeTimeoutSeconds"] = "3",
            ["Logging__LogLevel__Default"] = "Warning",
            ["DOTNET_gcServer"] = "0",
        };
        foreach (var (k, v) in BenchEnvironment.ApiRuntimeSettings())
        {
            settings[k] = v;
        }
        var apis = Enumerable.Range(0, ApiCount).Select(_ => ServiceProcess.Start("Queue.Api", primary, settings)).ToList();
        try
        {
            await Task.WhenAll(apis.Select(a => a.WaitHealthyAsync("/readyz")));
            await using var balancer = await LocalBalancer.StartAsync(apis.Select(a => a.Url));
            Console.WriteLine($"cluster: primary and GTID replica, {ApiCount} Api processes (tenant-fair) behind HAProxy {balancer.Url}");
            await WaitAllLiveAsync(source);

            await RateLimitAsync(report, balancer.Url, await CustomerAsync("limited", new TenantSettings([FairTask], RateLimit: rate, RateBurst: rate)), rate, apis);
            await WakeUpAsync(report, apis, await CustomerAsync("waker", new TenantSettings(["wake"])), workerKey);
            var fair = new[]
            {
                (Name: "big", Jobs: 1, Key: await CustomerAsync("big", new TenantSettings([FairTask]))),
                (Name: "medium", Jobs: 30, Key: await CustomerAsync("medium", new TenantSettings([FairTask]))),
                (Name: "small", Jobs: 300, Key: await CustomerAsync("small", new TenantSettings([FairTask]))),
            };
            await FairnessAsync(report, apis, balancer.Url, fair, items, workerKey);
        }
        finally
        {
            foreach (var a in apis)
            {
                await a.DisposeAsync();
            }
        }
        return report.Finish();
    }

    /// <summary>16 clients send as fast as answers come; past the first two seconds (the bursts) the accepted rate is the cluster's refill rate.</summary>
    private static async Task RateLimitAsync(Report report, Uri balancer, string key, int rate, List<ServiceProcess> apis)
    {
        using var http = Client(balancer, key, 32);
        var accepted = new ConcurrentBag<double>();
        var refused = 0L;
        var latency = Report.NewHistogram();
        var start = Stopwatch.GetTimestamp();
        var window = TimeSpan.FromSeconds(12);
        await Task.WhenAll(Enumerable.Range(0, 16).Select(async _ =>
        {
            while (Stopwatch.GetElapsedTime(start) < window)
            {
                var t = Stopwatch.GetTimestamp();
                using var r = await http.GetAsync(new Uri("/jobs?limit=1", UriKind.Relative));
                Report.Record(latency, t);
                if (r.IsSuccessStatusCode)
                {
                    accepted.Add(Stopwatch.GetElapsedTime(start).TotalSeconds);
                }
                else
                {
                    Interlocked.Increment(ref refused);
                }
            }
        }));
        var steady = accepted.Count(s => s >= 2) / (window.TotalSeconds - 2);
        Report.Row($"rate limit {rate}/s over {ApiCount} processes: accepted", steady, latency, apis.Sum(a => a.RssBytes()), "req/s");
        Console.WriteLine($"  {accepted.Count:N0} accepted, {refused:N0} refused (429) in {window.TotalSeconds:0} s; RSS is the sum of the Api processes");
        var ratio = steady / rate;
        report.Target("cluster-rate-limit", string.Create(CultureInfo.InvariantCulture, $"{ratio:F2}x of the set rate ({steady:F1} of {rate}/s)"),
            "0.9x to 1.1x", ratio is >= 0.9 and <= 1.1);
    }

    /// <summary>A worker long-polls on process 0; a job is created through process 1; the time from the 201 to the 200.</summary>
    private static async Task WakeUpAsync(Report report, List<ServiceProcess> apis, string customerKey, string workerKey)
    {
        using var waiting = Client(new Uri(apis[0].Url), workerKey, 4);
        using var other = Client(new Uri(apis[1].Url), customerKey, 4);
        var latency = Report.NewHistogram();
        const int Rounds = 40;
        for (var i = 0; i < Rounds; i++)
        {
            var poll = waiting.PostAsJsonAsync(new Uri("/next", UriKind.Relative), new { worker = "waiter", tasks = WakeTasks, max = 1, wait = 20 });
            await Task.Delay(200); // the scenario: the worker is already waiting when the work arrives elsewhere
            using (var created = await other.PostAsJsonAsync(new Uri("/jobs", UriKind.Relative), new
            {
                name = $"wake-{i}",
                tasks = WakeTasks,
                documents = new[] { new { name = "d.txt", content = Convert.ToBase64String("x"u8.ToArray()) } },
            }))
            {
                created.EnsureSuccessStatusCode();
            }
            var submitted = Stopwatch.GetTimestamp();
            using var r = await poll;
            Report.Record(latency, submitted);
            var item = (await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("items")[0];
            using var done = await waiting.PostAsJsonAsync(new Uri($"/items/{item.GetProperty("id").GetInt64()}/complete", UriKind.Relative),
                new { leaseToken = item.GetProperty("leaseToken").GetString() });
        }
        Report.Row("wake-up across processes (latency of each round)", Rounds, latency, apis[0].RssBytes(), "rounds");
        var p99 = Report.P(latency, 99);
        report.Target("cluster-wakeup-p99", string.Create(CultureInfo.InvariantCulture, $"{p99:F1} ms"), "<= 100 ms", p99 <= 100);
    }

    /// <summary>
    /// Three tenants with the same items in jobs of different sizes; four workers on each Api process claim one item at a
    /// time until half the items are done, while every tenant still has work. Jain's index of the claims per tenant.
    /// </summary>
    private static async Task FairnessAsync(Report report, List<ServiceProcess> apis, Uri balancer, (string Name, int Jobs, string Key)[] tenants,
        int items, string workerKey)
    {
        foreach (var (name, jobs, key) in tenants)
        {
            using var http = Client(balancer, key, 8);
            var perJob = items / jobs;
            await Parallel.ForEachAsync(Enumerable.Range(0, jobs), new ParallelOptions { MaxDegreeOfParallelism = 8 }, async (j, ct) =>
            {
                using var r = await http.PostAsJsonAsync(new Uri("/jobs", UriKind.Relative), new
                {
                    name = $"{name}-{j}",
                    tasks = new[] { FairTask },
                    documents = Enumerable.Range(0, perJob).Select(d => new { name = $"d{d}.txt", content = "eA==" }).ToArray(),
                }, ct);
                r.EnsureSuccessStatusCode();
            });
        }
        var stopAt = tenants.Length * items / 2;
        var claims = new ConcurrentDictionary<string, int>(StringComparer.Ordinal);
        var taken = 0;
        var latency = Report.NewHistogram();
        var start = Stopwatch.GetTimestamp();
        await Task.WhenAll(apis.SelectMany((api, p) => Enumerable.Range(0, 4).Select(async w =>
        {
            using var http = Client(new Uri(api.Url), workerKey, 2);
            while (Volatile.Read(ref taken) < stopAt)
            {
                var t = Stopwatch.GetTimestamp();
                using var r = await http.PostAsJsonAsync(new Uri("/next", UriKind.Relative), new { worker = $"p{p}w{w}", tasks = new[] { FairTask }, max = 1, wait = 1 });
                if (r.StatusCode != HttpStatusCode.OK)
                {
                    continue;
                }
                var item = (await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("items")[0];
                claims.AddOrUpdate(item.GetProperty("tenant").GetString()!, 1, (_, n) => n + 1);
                Interlocked.Increment(ref taken);
                using var done = await http.PostAsJsonAsync(new Uri($"/items/{item.GetProperty("id").GetInt64()}/complete", UriKind.Relative),
                    new { leaseToken = item.GetProperty("leaseToken").GetString() });
                Report.Record(latency, t);
            }
        })));
        var seconds = Stopwatch.GetElapsedTime(start).TotalSeconds;
        Report.Row($"drain, 12 workers over {ApiCount} processes", taken / seconds, latency, apis.Sum(a => a.RssBytes()), "items/s");
        var counts = tenants.Select(t => (double)claims.GetValueOrDefault(t.Name)).ToArray();
        Console.WriteLine("  claims per tenant: " + string.Join(", ", tenants.Select((t, i) => $"{t.Name} ({t.Jobs} jobs) {counts[i]:N0}")));
        var jain = Math.Pow(counts.Sum(), 2) / (counts.Length * counts.Sum(c => c * c));
        report.Target("cluster-tenant-fair-jain", string.Create(CultureInfo.InvariantCulture, $"{jain:F3}"), ">= 0.9", jain >= 0.9);
    }

    /// <summary>Until every Api process has counted all three live, so each enforces a third of a limit.</summary>
    private static async Task WaitAllLiveAsync(MySqlDataSource source)
    {
        await using var conn = await source.OpenConnectionAsync();
        var deadline = DateTime.UtcNow.AddSeconds(30);
        var since = await conn.ExecuteScalarAsync<DateTime>("SELECT UTC_TIMESTAMP(6)");
        while (await conn.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM cluster_nodes WHERE seen_at > @Since", new { Since = since }) < ApiCount
            || await conn.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM cluster_nodes WHERE seen_at > @Since + INTERVAL 1 SECOND", new { Since = since }) < ApiCount)
        {
            if (DateTime.UtcNow > deadline)
            {
                throw new TimeoutException("the three Api processes did not all beat within 30 s");
            }
            await Task.Delay(200);
        }
    }

    private static HttpClient Client(Uri baseAddress, string key, int connections)
    {
        var http = new HttpClient(new SocketsHttpHandler { MaxConnectionsPerServer = connections, PooledConnectionLifetime = TimeSpan.FromMinutes(5) })
        {
            BaseAddress = baseAddress,
            Timeout = TimeSpan.FromSeconds(60),
        };
        http.DefaultRequestHeaders.Authorization = new AuthenticationHeaderValue("Bearer", key);
        return http;
    }
}
