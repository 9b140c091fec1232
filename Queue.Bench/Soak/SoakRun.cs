using System.Collections.Concurrent;
using System.Diagnostics;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Dapper;
using MySqlConnector;
using Queue.Core.Data;

namespace Queue.Bench.Soak;

public sealed record SoakSample(double Seconds, double ApiRssMb, long ApiThreads, double DbRssMb, long Connections, long LockWaits, double CompletedPerSecond);

/// <summary>The reconciliation of every item of every job whose creation and uploads were acknowledged.</summary>
public sealed record SoakResult(long Jobs, long Submitted, long Done, long Dead, long Cancelled, long Pending, long Duplicates, long UncertainJobs,
    IReadOnlyList<SoakSample> Samples, IReadOnlyList<string> Events)
{
    public bool Reconciled => Submitted == Done + Dead + Cancelled + Pending && Duplicates == 0;
}

/// <summary>
/// A steady mix of inline submits, streamed uploads, cancels, claims, completes, fails and extends against a real Api
/// and MariaDB, while workers are killed at random (their leases abandoned), the Api is killed and restarted, and the
/// database is killed and restarted once; then every item is reconciled (docs/DESIGN.md "Invariants that failures
/// must not break").
/// </summary>
public sealed class SoakRun(TimeSpan duration, int seed, Action<string> log)
{
    private const int Producers = 4;
    private const int Workers = 8;
    private const int LeaseSeconds = 10;

    private readonly ConcurrentDictionary<long, long> expected = new(); // job -> acknowledged items
    private readonly ConcurrentDictionary<long, byte> uncertain = new(); // jobs with an answer lost to a fault
    private readonly ConcurrentDictionary<long, int> completions = new(); // item -> 204s received
    private readonly ConcurrentQueue<string> events = new();
    private long completed;

    public async Task<SoakResult> RunAsync()
    {
        await using var world = await SoakWorld.StartAsync();
        using var http = new HttpClient(new SocketsHttpHandler { PooledConnectionLifetime = TimeSpan.FromMinutes(1), PooledConnectionIdleTimeout = TimeSpan.FromSeconds(10) })
        {
            Timeout = TimeSpan.FromSeconds(30),
        };
        var clock = Stopwatch.StartNew();
        using var produce = new CancellationTokenSource(duration);
        using var work = new CancellationTokenSource();
        var samples = new List<SoakSample>();
        var sampler = SampleAsync(world, clock, samples, work.Token);
        var producers = Enumerable.Range(0, Producers).Select(p => ProduceAsync(world, http, new Random(seed * 31 + p), produce.Token)).ToList();
        var workers = Enumerable.Range(0, Workers).Select(w => WorkAsync(world, http, new Random(seed * 17 + w), $"soak-{w}", work.Token)).ToList();
        await ChaosAsync(world, clock, produce.Token);
        await Task.WhenAll(producers);
        // Drain: everything acknowledged reaches an end state (abandoned leases expire, retries fall due), bounded.
        var drained = await DrainedAsync(world, TimeSpan.FromSeconds(LeaseSeconds * 6));
        Event($"{clock.Elapsed.TotalSeconds:F0}s drain {(drained ? "finished" : "cut off")}");
        await work.CancelAsync();
        await Task.WhenAll(workers);
        await sampler;
        return await ReconcileAsync(world, samples);
    }

    private void Event(string text)
    {
        events.Enqueue(text);
        log(text);
    }

    private async Task ChaosAsync(SoakWorld world, Stopwatch clock, CancellationToken ct)
    {
        try
        {
            await Task.Delay(duration / 4, ct);
            Event($"{clock.Elapsed.TotalSeconds:F0}s kill -9 Queue.Api, restart");
            await world.RestartApiAsync();
            await Task.Delay(duration / 4, ct);
            Event($"{clock.Elapsed.TotalSeconds:F0}s kill -9 mariadbd, restart");
            await world.RestartDatabaseAsync();
            await Task.Delay(Timeout.InfiniteTimeSpan, ct);
        }
        catch (OperationCanceledException)
        {
        }
    }

    private async Task ProduceAsync(SoakWorld world, HttpClient http, Random random, CancellationToken ct)
    {
        for (var n = 0; !ct.IsCancellationRequested; n++)
        {
            try
            {
                var tasks = random.Next(2) == 0 ? new[] { "text" } : ["text", "ocr"];
                if (random.Next(3) > 0)
                {
                    var docs = random.Next(1, 4);
                    var job = await SendAsync(http, HttpMethod.Post, world, "/jobs", JsonContent.Create(new
                    {
                        name = $"inline-{n}",
                        tasks,
                        documents = Enumerable.Range(0, docs).Select(i => new { name = $"d{i}.txt", content = Convert.ToBase64String(new byte[random.Next(10, 2000)]) }).ToArray(),
                    }), world.CustomerKey);
                    if (job is { } id)
                    {
                        expected[id] = docs * tasks.Length;
                        if (random.Next(20) == 0)
                        {
                            Uncertain(id, await SendAsync(http, HttpMethod.Delete, world, $"/jobs/{id}", null, world.CustomerKey) is null);
                        }
                    }
                }
                else if (await SendAsync(http, HttpMethod.Post, world, "/jobs", JsonContent.Create(new { name = $"streamed-{n}", tasks, open = true }), world.CustomerKey) is { } id)
                {
                    expected[id] = 0;
                    var content = new ByteArrayContent(new byte[random.Next(100, 300_000)]); // some past the grouped size: spooled
                    content.Headers.ContentType = new("application/octet-stream");
                    var ok = await SendAsync(http, HttpMethod.Post, world, $"/jobs/{id}/documents?name=s.bin", content, world.CustomerKey) is not null;
                    if (ok)
                    {
                        expected[id] = tasks.Length;
                    }
                    Uncertain(id, !ok); // a lost upload answer: it may or may not have landed
                    await SendAsync(http, HttpMethod.Post, world, $"/jobs/{id}/close", null, world.CustomerKey); // adds no item either way
                }
            }
            catch (OperationCanceledException) when (ct.IsCancellationRequested)
            {
                return;
            }
        }
    }

    private void Uncertain(long job, bool lost)
    {
        if (lost)
        {
            uncertain[job] = 0;
        }
    }

    private async Task WorkAsync(SoakWorld world, HttpClient http, Random random, string name, CancellationToken ct)
    {
        while (!ct.IsCancellationRequested)
        {
            try
            {
                using var r = await Call(http, HttpMethod.Post, world, "/next", JsonContent.Create(new { worker = name, max = 5, wait = 1, lease = LeaseSeconds }), world.WorkerKey, ct);
                if (r.StatusCode != HttpStatusCode.OK)
                {
                    continue;
                }
                foreach (var item in (await r.Content.ReadFromJsonAsync<JsonElement>(ct)).GetProperty("items").EnumerateArray())
                {
                    var id = item.GetProperty("id").GetInt64();
                    var token = item.GetProperty("leaseToken").GetString();
                    var roll = random.NextDouble();
                    if (roll < 0.03)
                    {
                        continue; // a worker killed holding the lease: nobody completes it, the lease must expire
                    }
                    if (roll < 0.18)
                    {
                        using var _ = await Call(http, HttpMethod.Post, world, $"/items/{id}/fail", JsonContent.Create(new { leaseToken = token, error = "soak", retry = true }), world.WorkerKey, ct);
                        continue;
                    }
                    if (roll < 0.23)
                    {
                        using var _ = await Call(http, HttpMethod.Post, world, $"/items/{id}/extend", JsonContent.Create(new { leaseToken = token, lease = 30 }), world.WorkerKey, ct);
                    }
                    using var done = await Call(http, HttpMethod.Post, world, $"/items/{id}/complete", JsonContent.Create(new { leaseToken = token }), world.WorkerKey, ct);
                    if (done.StatusCode == HttpStatusCode.NoContent)
                    {
                        completions.AddOrUpdate(id, 1, (_, c) => c + 1);
                        Interlocked.Increment(ref completed);
                    }
                }
            }
            catch (Exception ex) when (ex is HttpRequestException or TaskCanceledException or JsonException)
            {
                if (ct.IsCancellationRequested)
                {
                    return;
                }
            }
        }
    }

    /// <summary>The job id of a 2xx answer carrying one (any 2xx for other calls), or null when the call failed or its answer was lost.</summary>
    private static async Task<long?> SendAsync(HttpClient http, HttpMethod method, SoakWorld world, string path, HttpContent? body, string key)
    {
        try
        {
            using var r = await Call(http, method, world, path, body, key, CancellationToken.None);
            if (!r.IsSuccessStatusCode)
            {
                return null;
            }
            var json = await r.Content.ReadFromJsonAsync<JsonElement>();
            return json.TryGetProperty("id", out var id) ? id.GetInt64() : 0;
        }
        catch (Exception ex) when (ex is HttpRequestException or TaskCanceledException or JsonException)
        {
            return null;
        }
    }

    private static Task<HttpResponseMessage> Call(HttpClient http, HttpMethod method, SoakWorld world, string path, HttpContent? body, string key, CancellationToken ct)
    {
        var request = new HttpRequestMessage(method, new Uri(new Uri(world.Url), path)) { Content = body };
        request.Headers.Authorization = new("Bearer", key);
        return http.SendAsync(request, ct);
    }

    private async Task SampleAsync(SoakWorld world, Stopwatch clock, List<SoakSample> samples, CancellationToken ct)
    {
        var last = 0L;
        while (!ct.IsCancellationRequested)
        {
            try
            {
                await Task.Delay(1000, ct);
            }
            catch (OperationCanceledException)
            {
                return;
            }
            var (dbRss, connections, lockWaits) = await world.DatabaseStatsAsync();
            var now = Interlocked.Read(ref completed);
            int pid;
            try
            {
                pid = world.Api.Pid;
            }
            catch (InvalidOperationException)
            {
                continue; // the Api is being restarted: no sample this second
            }
            samples.Add(new SoakSample(clock.Elapsed.TotalSeconds, Proc.RssBytes(pid) / 1048576.0, Proc.Threads(pid), dbRss / 1048576.0,
                connections, lockWaits, now - last));
            last = now;
        }
    }

    private async Task<bool> DrainedAsync(SoakWorld world, TimeSpan within)
    {
        var deadline = DateTime.UtcNow + within;
        while (DateTime.UtcNow < deadline)
        {
            var (_, _, _, _, pending) = await CountAsync(world);
            if (pending == 0)
            {
                return true;
            }
            await Task.Delay(500);
        }
        return false;
    }

    private async Task<(long Total, long Done, long Dead, long Cancelled, long Pending)> CountAsync(SoakWorld world)
    {
        var jobs = expected.Keys.Where(j => !uncertain.ContainsKey(j)).ToList();
        await using var conn = new MySqlConnection(QueueDatabase.Normalize(world.ConnectionString));
        await conn.OpenAsync();
        var rows = (await conn.QueryAsync<(int State, long N)>("SELECT state, COUNT(*) FROM items WHERE job_id IN @jobs GROUP BY state", new { jobs }))
            .ToDictionary(r => r.State, r => r.N);
        long Of(int s) => rows.GetValueOrDefault(s);
        return (rows.Values.Sum(), Of(2), Of(3), Of(4), Of(0) + Of(1));
    }

    private async Task<SoakResult> ReconcileAsync(SoakWorld world, List<SoakSample> samples)
    {
        var (total, done, dead, cancelled, pending) = await CountAsync(world);
        var certain = expected.Where(e => !uncertain.ContainsKey(e.Key)).ToList();
        var submitted = certain.Sum(e => e.Value);
        if (total != submitted)
        {
            Event($"the database holds {total} items of acknowledged jobs, {submitted} were acknowledged");
        }
        return new SoakResult(certain.Count, submitted, done, dead, cancelled, pending, completions.Count(c => c.Value > 1), uncertain.Count,
            samples, [.. events]);
    }
}
