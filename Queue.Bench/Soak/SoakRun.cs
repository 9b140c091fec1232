using System.Collections.Concurrent;
using System.Diagnostics;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Dapper;
using MySqlConnector;
using Queue.Bench.Sql;
using Queue.Core.Data;

namespace Queue.Bench.Soak;

public sealed record SoakSample(double Seconds, double ApiRssMb, long ApiThreads, double DbRssMb, long Connections, long LockWaits, double CompletedPerSecond);

/// <summary>
/// What was done twice: jobs (two jobs of one producer's name, or one no producer made), documents (two of one name in
/// a job), items (two of one document and task), completions answered 204 for a second lease token of one item, and
/// completions the database counted past its done items.
/// </summary>
public sealed record SoakDuplicates(long Jobs, long Documents, long Items, long Completions, long CompletedInDatabase)
{
    public long Total => Jobs + Documents + Items + Completions + CompletedInDatabase;
}

/// <summary>
/// The reconciliation of every item of every job the producers made: <see cref="Submitted"/> counts the items of
/// acknowledged jobs and uploads, plus those of the few whose answer never became definitive (<see cref="Unanswered"/>)
/// that the database shows landed.
/// </summary>
public sealed record SoakResult(long Jobs, long Unanswered, long UnansweredLanded, long Submitted, long Done, long Dead, long Cancelled, long Pending,
    long MissingJobs, SoakDuplicates Duplicates, IReadOnlyDictionary<string, int> Faults, IReadOnlyList<SoakSample> Samples, IReadOnlyList<string> Events)
{
    public bool Exact => Submitted == Done + Dead + Cancelled + Pending;

    public bool Reconciled => Exact && MissingJobs == 0 && Duplicates.Total == 0;
}

/// <summary>
/// A steady mix of inline submits, streamed uploads, cancels, claims, completes, fails and extends against a real Api
/// and MariaDB, while workers are killed at random (their leases abandoned) and <see cref="SoakChaos"/> injects its
/// faults; then every item is reconciled (docs/DESIGN.md "Invariants that failures must not break"). Every write is
/// retried as the contract allows until it gets a definitive answer: job creations and uploads with their
/// Idempotency-Key, completions and fails with their lease token, claims with their requestId.
/// </summary>
public sealed class SoakRun(TimeSpan duration, int seed, Action<string> log, bool faults = false)
{
    private const int Producers = 4;
    private const int Workers = 8;
    private const int LeaseSeconds = 10;

    /// <summary>How long a write is retried through 5xx answers and broken connections: past an Api or database restart.</summary>
    private static readonly TimeSpan AnswerWindow = TimeSpan.FromSeconds(60);

    /// <summary>
    /// How long a key is retried while it answers 409: a write still landing settles within the Api's database wait;
    /// a key its dying process left running answers 409 until the service's 10-minute takeover.
    /// </summary>
    private static readonly TimeSpan InFlightWindow = TimeSpan.FromSeconds(15);

    private readonly ConcurrentQueue<Submission> submissions = new();
    private readonly ConcurrentDictionary<long, string> completedBy = new(); // item -> the lease token of its first 204
    private readonly ConcurrentQueue<string> events = new();
    private long completed;
    private long secondTokenCompletions;

    public async Task<SoakResult> RunAsync()
    {
        await using var world = await SoakWorld.StartAsync(proxied: faults);
        using var http = new HttpClient(new SocketsHttpHandler { PooledConnectionLifetime = TimeSpan.FromMinutes(1), PooledConnectionIdleTimeout = TimeSpan.FromSeconds(10) })
        {
            Timeout = TimeSpan.FromSeconds(15),
        };
        var clock = Stopwatch.StartNew();
        using var produce = new CancellationTokenSource(duration);
        using var work = new CancellationTokenSource();
        var samples = new List<SoakSample>();
        var sampler = SampleAsync(world, clock, samples, work.Token);
        var producers = Enumerable.Range(0, Producers).Select(p => ProduceAsync(world, http, p, new Random(seed * 31 + p), produce.Token)).ToList();
        var workers = Enumerable.Range(0, Workers).Select(w => WorkAsync(world, http, new Random(seed * 17 + w), $"soak-{w}", work.Token)).ToList();
        var chaos = new SoakChaos(world, duration, new Random(seed * 7 + 3), clock, Event);
        await chaos.RunAsync(produce.Token);
        await Task.WhenAll(producers);
        // Drain: everything acknowledged reaches an end state (abandoned leases expire, retries fall due), bounded.
        var drained = await DrainedAsync(world, TimeSpan.FromSeconds(LeaseSeconds * 6));
        Event($"{clock.Elapsed.TotalSeconds:F0}s drain {(drained ? "finished" : "cut off")}");
        if (!drained)
        {
            await PendingAsync(world);
        }
        await work.CancelAsync();
        await Task.WhenAll(workers);
        await sampler;
        return await ReconcileAsync(world, samples, chaos.Counts);
    }

    private void Event(string text)
    {
        events.Enqueue(text);
        log(text);
    }

    /// <summary>One job a producer meant to make, and what it was told.</summary>
    private sealed class Submission(string name)
    {
        public string Name { get; } = name;

        public long? JobId { get; set; }

        /// <summary>The items of its acknowledged creation and uploads.</summary>
        public long Items { get; set; }

        /// <summary>Its creation got no definitive answer within the windows.</summary>
        public bool Unanswered { get; set; }

        /// <summary>Its upload got no definitive answer within the windows.</summary>
        public bool UploadUnanswered { get; set; }
    }

    private enum Outcome
    {
        Answered,
        Refused,
        Unanswered,
    }

    private async Task ProduceAsync(SoakWorld world, HttpClient http, int producer, Random random, CancellationToken ct)
    {
        // Bounded by the run's length; a submission under way when it ends still goes on to its definitive answer.
        for (var n = 0; !ct.IsCancellationRequested; n++)
        {
            var tasks = random.Next(2) == 0 ? new[] { "text" } : ["text", "ocr"];
            if (random.Next(3) > 0)
            {
                var docs = random.Next(1, 4);
                var s = new Submission($"inline-{producer}-{n}");
                submissions.Enqueue(s);
                var body = JsonSerializer.SerializeToUtf8Bytes(new
                {
                    name = s.Name,
                    tasks,
                    documents = Enumerable.Range(0, docs).Select(i => new { name = $"d{i}.txt", content = Convert.ToBase64String(new byte[random.Next(10, 2000)]) }).ToArray(),
                });
                var (outcome, job) = await UntilAnsweredAsync(http, world, HttpMethod.Post, "/jobs", body, "application/json", Key(s.Name));
                if (outcome == Outcome.Answered)
                {
                    s.JobId = job.GetProperty("id").GetInt64();
                    s.Items = docs * tasks.Length;
                    if (random.Next(20) == 0)
                    {
                        await UntilAnsweredAsync(http, world, HttpMethod.Delete, $"/jobs/{s.JobId}", null, null, null);
                    }
                }
                s.Unanswered = outcome == Outcome.Unanswered;
            }
            else
            {
                var s = new Submission($"streamed-{producer}-{n}");
                submissions.Enqueue(s);
                var body = JsonSerializer.SerializeToUtf8Bytes(new { name = s.Name, tasks, open = true });
                var (outcome, job) = await UntilAnsweredAsync(http, world, HttpMethod.Post, "/jobs", body, "application/json", Key(s.Name));
                s.Unanswered = outcome == Outcome.Unanswered;
                if (outcome != Outcome.Answered)
                {
                    continue;
                }
                s.JobId = job.GetProperty("id").GetInt64();
                var bytes = new byte[random.Next(100, 300_000)]; // some past the grouped size: spooled
                var (uploaded, _) = await UntilAnsweredAsync(http, world, HttpMethod.Post, $"/jobs/{s.JobId}/documents?name=s.bin", bytes,
                    "application/octet-stream", Key(s.Name + "-upload"));
                s.Items = uploaded == Outcome.Answered ? tasks.Length : 0;
                s.UploadUnanswered = uploaded == Outcome.Unanswered;
                await UntilAnsweredAsync(http, world, HttpMethod.Post, $"/jobs/{s.JobId}/close", null, null, null); // adds no item either way
            }
        }
    }

    private string Key(string name) => $"soak-{seed}-{name}";

    /// <summary>
    /// Sends the same request (same bytes, same key) until a definitive answer: a 2xx, or a 4xx that says nothing
    /// changed. 5xx, 429 and broken connections are retried for <see cref="AnswerWindow"/>; a 409 (the key's first
    /// request still running) for <see cref="InFlightWindow"/>. Past either, the outcome stays unknown.
    /// </summary>
    private async Task<(Outcome Outcome, JsonElement Body)> UntilAnsweredAsync(HttpClient http, SoakWorld world, HttpMethod method, string path,
        byte[]? body, string? contentType, string? idempotencyKey)
    {
        var clock = Stopwatch.StartNew();
        TimeSpan? firstConflict = null;
        var pause = TimeSpan.FromMilliseconds(50);
        while (clock.Elapsed < AnswerWindow)
        {
            try
            {
                using var request = new HttpRequestMessage(method, new Uri(new Uri(world.Url), path));
                request.Headers.Authorization = new("Bearer", world.CustomerKey);
                if (idempotencyKey is not null)
                {
                    request.Headers.Add("Idempotency-Key", idempotencyKey);
                }
                if (body is not null)
                {
                    request.Content = new ByteArrayContent(body);
                    request.Content.Headers.ContentType = new(contentType!);
                }
                using var r = await http.SendAsync(request);
                if (r.IsSuccessStatusCode)
                {
                    return (Outcome.Answered, await r.Content.ReadFromJsonAsync<JsonElement>());
                }
                if (r.StatusCode == HttpStatusCode.Conflict)
                {
                    firstConflict ??= clock.Elapsed;
                    if (clock.Elapsed - firstConflict > InFlightWindow)
                    {
                        Event($"{method} {path} (key {idempotencyKey}): 409 for {InFlightWindow.TotalSeconds:F0} s, first after {firstConflict.Value.TotalSeconds:F1} s: no definitive answer");
                        return (Outcome.Unanswered, default);
                    }
                }
                else if ((int)r.StatusCode < 500 && r.StatusCode != HttpStatusCode.TooManyRequests)
                {
                    Event($"{method} {path}: {(int)r.StatusCode} {await r.Content.ReadAsStringAsync()}");
                    return (Outcome.Refused, default);
                }
            }
            catch (Exception ex) when (ex is HttpRequestException or TaskCanceledException or IOException or JsonException)
            {
                // The connection broke, the Api is restarting or the answer was cut short: the same request again.
            }
            await Task.Delay(pause);
            pause = TimeSpan.FromTicks(Math.Min(pause.Ticks * 2, TimeSpan.FromSeconds(1).Ticks));
        }
        Event($"{method} {path} (key {idempotencyKey}): 5xx or no answer for {AnswerWindow.TotalSeconds:F0} s: no definitive answer");
        return (Outcome.Unanswered, default);
    }

    private async Task WorkAsync(SoakWorld world, HttpClient http, Random random, string name, CancellationToken ct)
    {
        while (!ct.IsCancellationRequested)
        {
            try
            {
                foreach (var item in await ClaimAsync(world, http, name, ct))
                {
                    var id = item.GetProperty("id").GetInt64();
                    var token = item.GetProperty("leaseToken").GetString()!;
                    var roll = random.NextDouble();
                    if (roll < 0.03)
                    {
                        continue; // a worker killed holding the lease: nobody completes it, the lease must expire
                    }
                    if (roll < 0.18)
                    {
                        await SettleAsync(world, http, $"/items/{id}/fail", new { leaseToken = token, error = "soak", retry = true }, ct);
                        continue;
                    }
                    if (roll < 0.23)
                    {
                        using var _ = await Call(http, HttpMethod.Post, world, $"/items/{id}/extend", JsonContent.Create(new { leaseToken = token, lease = 30 }), world.WorkerKey, ct);
                    }
                    if (await SettleAsync(world, http, $"/items/{id}/complete", new { leaseToken = token }, ct) == HttpStatusCode.NoContent)
                    {
                        Interlocked.Increment(ref completed);
                        if (completedBy.GetOrAdd(id, token) != token)
                        {
                            Interlocked.Increment(ref secondTokenCompletions);
                            Event($"item {id} completed (204) with two lease tokens");
                        }
                    }
                }
            }
            catch (Exception ex) when (ex is HttpRequestException or TaskCanceledException or IOException or JsonException)
            {
                if (ct.IsCancellationRequested)
                {
                    return;
                }
            }
        }
    }

    /// <summary>POST /next, retried with its requestId after a lost answer so the same leases come back, a few times.</summary>
    private static async Task<List<JsonElement>> ClaimAsync(SoakWorld world, HttpClient http, string name, CancellationToken ct)
    {
        var requestId = Guid.NewGuid().ToString("N");
        for (var attempt = 0; attempt < 4; attempt++)
        {
            try
            {
                using var r = await Call(http, HttpMethod.Post, world, "/next",
                    JsonContent.Create(new { worker = name, max = 5, wait = 1, lease = LeaseSeconds, requestId }), world.WorkerKey, ct);
                if (r.StatusCode == HttpStatusCode.OK)
                {
                    return [.. (await r.Content.ReadFromJsonAsync<JsonElement>(ct)).GetProperty("items").EnumerateArray()];
                }
                if ((int)r.StatusCode < 500)
                {
                    return [];
                }
            }
            catch (Exception ex) when ((ex is HttpRequestException or IOException or JsonException || ex is TaskCanceledException) && !ct.IsCancellationRequested)
            {
            }
            await Task.Delay(200, ct);
        }
        return [];
    }

    /// <summary>A complete or fail, sent again with the same lease token until it is answered 2xx, 404 or 409, bounded.</summary>
    private static async Task<HttpStatusCode?> SettleAsync(SoakWorld world, HttpClient http, string path, object body, CancellationToken ct)
    {
        var clock = Stopwatch.StartNew();
        while (clock.Elapsed < AnswerWindow)
        {
            try
            {
                using var r = await Call(http, HttpMethod.Post, world, path, JsonContent.Create(body), world.WorkerKey, ct);
                if ((int)r.StatusCode < 500)
                {
                    return r.StatusCode;
                }
            }
            catch (Exception ex) when ((ex is HttpRequestException or IOException || ex is TaskCanceledException) && !ct.IsCancellationRequested)
            {
            }
            await Task.Delay(200, ct);
        }
        return null;
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

    private static async Task<bool> DrainedAsync(SoakWorld world, TimeSpan within)
    {
        var deadline = DateTime.UtcNow + within;
        while (DateTime.UtcNow < deadline)
        {
            // The database is the soak's own: every item in it is one of the producers'.
            await using var conn = new MySqlConnection(QueueDatabase.Normalize(world.ConnectionString));
            await conn.OpenAsync();
            if (await conn.ExecuteScalarAsync<long>("SELECT COUNT(*) FROM items WHERE state < 2") == 0)
            {
                return true;
            }
            await Task.Delay(500);
        }
        return false;
    }

    /// <summary>What a cut-off drain left pending, each item with its lane: why nothing claimed it.</summary>
    private async Task PendingAsync(SoakWorld world)
    {
        await using var conn = new MySqlConnection(QueueDatabase.Normalize(world.ConnectionString));
        await conn.OpenAsync();
        var rows = await conn.QueryAsync<(long Id, long Job, string Task, int State, int Active, int Attempts, double DueIn, double? LeaseIn, int JobState,
            double? LaneIn, int? Blocked, string? Error, string? Mode, long? InBand)>(SoakSql.Pending);
        foreach (var r in rows)
        {
            Event($"pending item {r.Id} (job {r.Job} state {r.JobState}, {r.Task}): state {r.State}, active {r.Active}, attempts {r.Attempts}, " +
                $"due in {r.DueIn:F1} s, lease expires in {r.LeaseIn?.ToString("F1", System.Globalization.CultureInfo.InvariantCulture) ?? "-"} s, " +
                $"lane {(r.LaneIn is { } lane ? $"available in {lane:F1} s, blocked {r.Blocked}, mode {r.Mode}, in the current band {r.InBand == 1}" : "missing")}, " +
                $"last error {r.Error ?? "-"}");
        }
    }

    private async Task<SoakResult> ReconcileAsync(SoakWorld world, List<SoakSample> samples, IReadOnlyDictionary<string, int> faultCounts)
    {
        await using var conn = new MySqlConnection(QueueDatabase.Normalize(world.ConnectionString));
        await conn.OpenAsync();
        var jobs = (await conn.QueryAsync<(long Id, string Name, long ItemsDone)>("SELECT id, name, items_done FROM jobs")).ToList();
        var states = new Dictionary<long, long[]>();
        foreach (var (job, state, n) in await conn.QueryAsync<(long Job, int State, long N)>("SELECT job_id, state, COUNT(*) FROM items GROUP BY job_id, state"))
        {
            (states.TryGetValue(job, out var s) ? s : states[job] = new long[5])[state] = n;
        }
        var duplicateDocuments = await conn.ExecuteScalarAsync<long>("SELECT COUNT(*) - COUNT(DISTINCT job_id, name) FROM documents");
        var duplicateItems = await conn.ExecuteScalarAsync<long>("SELECT COUNT(*) - COUNT(DISTINCT document_id, task) FROM items");
        long ItemsOf(long job) => states.TryGetValue(job, out var s) ? s.Sum() : 0;

        var byName = jobs.GroupBy(j => j.Name).ToDictionary(g => g.Key, g => g.ToList());
        var made = submissions.ToDictionary(s => s.Name);
        var duplicateJobs = 0L;
        foreach (var (name, same) in byName)
        {
            var extra = made.ContainsKey(name) ? same.Count - 1 : same.Count;
            if (extra > 0)
            {
                duplicateJobs += extra;
                Event($"{extra} job(s) too many named {name}: ids {string.Join(", ", same.Select(j => j.Id))}");
            }
        }
        var inScope = new List<long>();
        long acknowledged = 0, unanswered = 0, landed = 0, submitted = 0, missing = 0;
        foreach (var s in made.Values)
        {
            if (s.JobId is { } id)
            {
                acknowledged++;
                if (!byName.TryGetValue(s.Name, out var same) || same.All(j => j.Id != id))
                {
                    missing++;
                    Event($"job {id} ({s.Name}) was acknowledged and is not in the database");
                    continue;
                }
                inScope.Add(id);
                // An upload whose outcome stayed unknown is counted as the database shows it; everything else as acknowledged.
                submitted += s.UploadUnanswered ? ItemsOf(id) : s.Items;
                unanswered += s.UploadUnanswered ? 1 : 0;
                if (!s.UploadUnanswered && ItemsOf(id) != s.Items)
                {
                    Event($"job {id} ({s.Name}): {s.Items} items acknowledged, {ItemsOf(id)} in the database");
                }
            }
            else if (byName.TryGetValue(s.Name, out var same))
            {
                if (s.Unanswered)
                {
                    unanswered++;
                    landed++;
                    inScope.Add(same[0].Id);
                    submitted += ItemsOf(same[0].Id);
                }
                else
                {
                    duplicateJobs++; // refused with a 4xx, which changes nothing, and yet made
                    Event($"job {s.Name} was refused and is in the database");
                }
            }
            else if (s.Unanswered)
            {
                unanswered++;
            }
        }
        long Sum(int state) => inScope.Sum(j => states.TryGetValue(j, out var s) ? s[state] : 0);
        var doneRows = jobs.ToDictionary(j => j.Id, j => states.TryGetValue(j.Id, out var s) ? s[2] : 0);
        var completedInDatabase = jobs.Sum(j => Math.Max(0, j.ItemsDone - doneRows[j.Id]));
        foreach (var j in jobs.Where(j => j.ItemsDone != doneRows[j.Id]).Take(5))
        {
            Event($"job {j.Id} counts {j.ItemsDone} items done, {doneRows[j.Id]} items are done");
        }
        return new SoakResult(acknowledged, unanswered, landed, submitted, Sum(2), Sum(3), Sum(4), Sum(0) + Sum(1), missing,
            new SoakDuplicates(duplicateJobs, duplicateDocuments, duplicateItems, Interlocked.Read(ref secondTokenCompletions), completedInDatabase),
            faultCounts, samples, [.. events]);
    }
}
