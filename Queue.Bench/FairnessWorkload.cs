using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Http.Headers;
using System.Net.Http.Json;
using System.Text.Json;
using System.Text.Json.Serialization;
using HdrHistogram;
using Queue.Bench.Harness;

namespace Queue.Bench;

/// <summary>What one phase of the <c>fairness</c> bench saw: its jobs, handouts and completions, and the call latencies.</summary>
internal sealed class FairTrace
{
    private readonly long origin = Stopwatch.GetTimestamp();
    private readonly Lock gate = new();
    private readonly Dictionary<string, long> completedOf = new(StringComparer.Ordinal);
    private long submittedItems;
    private long completedItems;

    public List<FairJob> Jobs { get; } = [];

    public List<FairClaim> Claims { get; } = [];

    public List<FairCompletion> Completions { get; } = [];

    /// <summary>POST /next calls that handed out an item; empty answers (a long-poll that timed out) are not latencies.</summary>
    public LongConcurrentHistogram ClaimLatency { get; } = Report.NewHistogram();

    public LongConcurrentHistogram CompleteLatency { get; } = Report.NewHistogram();

    /// <summary>Completions answered 409: a lease lost under a worker, which this workload never lets happen.</summary>
    public long Stale;

    public double Now => Stopwatch.GetElapsedTime(origin).TotalSeconds;

    /// <summary>When the workers started, on <see cref="Now"/>'s clock.</summary>
    public double Started { get; set; }

    /// <summary>From the workers' start to the last completion (or the cap): the phase's rate without its queueing.</summary>
    public double DrainSeconds { get; set; }

    public long SubmittedItems => Interlocked.Read(ref submittedItems);

    public long CompletedItems => Interlocked.Read(ref completedItems);

    /// <summary>Counted before the POST is sent, so the phase never ends while a submission is on its way.</summary>
    public void Submitting(int items) => Interlocked.Add(ref submittedItems, items);

    public void Add(FairJob job)
    {
        lock (gate)
        {
            Jobs.Add(job);
        }
    }

    public void Add(FairClaim claim)
    {
        lock (gate)
        {
            Claims.Add(claim);
        }
    }

    public void Add(FairCompletion done, string tenant)
    {
        lock (gate)
        {
            Completions.Add(done);
            completedOf[tenant] = completedOf.GetValueOrDefault(tenant) + 1;
        }
        Interlocked.Increment(ref completedItems);
    }

    public long CompletedOf(string tenant)
    {
        lock (gate)
        {
            return completedOf.GetValueOrDefault(tenant);
        }
    }
}

/// <summary>
/// The <c>fairness</c> workload over HTTP: submitters (POST /jobs with inline 1-byte documents, one key per tenant) and
/// workers that loop POST /next (max 1) -> <paramref name="workMs"/> of work (Task.Delay) -> complete.
/// </summary>
internal sealed class FairnessLoad(HttpClient http, string workerKey, string task, int workMs, int waitSeconds, int completionsInFlight)
{
    private static readonly MediaTypeHeaderValue Json = new("application/json");

    /// <summary>One job of <paramref name="items"/> documents, for <paramref name="tenant"/>; recorded in <paramref name="trace"/>.</summary>
    public async Task SubmitAsync(FairTrace trace, string tenant, string key, string name, int items)
    {
        var documents = Enumerable.Range(0, items).Select(d => new NewDocument("d" + d.ToString(CultureInfo.InvariantCulture) + ".txt", "eA==")).ToList();
        var body = JsonSerializer.SerializeToUtf8Bytes(new NewJobBody(name, [task], documents), FairnessBenchJson.Default.NewJobBody);
        trace.Submitting(items);
        var sent = trace.Now;
        using var r = await SendAsync(HttpMethod.Post, "/jobs", key, body, default);
        var answered = trace.Now;
        await Expect(r, HttpStatusCode.Created, "POST /jobs");
        var location = r.Headers.Location?.OriginalString ?? throw new InvalidOperationException("POST /jobs answered without Location");
        trace.Add(new FairJob(long.Parse(location.AsSpan(location.LastIndexOf('/') + 1), CultureInfo.InvariantCulture), tenant, items, sent, answered));
    }

    /// <summary>
    /// <paramref name="workers"/> loops until <paramref name="stop"/>. Only cancel it once every submitted item is
    /// completed: a /next cancelled mid-flight could otherwise leave an item leased to nobody.
    /// </summary>
    public async Task WorkAsync(FairTrace trace, int workers, CancellationToken stop)
    {
        using var inFlight = new SemaphoreSlim(Math.Max(1, completionsInFlight));
        await Task.WhenAll(Enumerable.Range(0, workers).Select(w => Task.Run(async () =>
        {
            var next = JsonSerializer.SerializeToUtf8Bytes(new NextBody("fair-" + w.ToString(CultureInfo.InvariantCulture), [task], 1, waitSeconds),
                FairnessBenchJson.Default.NextBody);
            var finishing = new List<Task>();
            try
            {
                while (!stop.IsCancellationRequested)
                {
                    var t0 = Stopwatch.GetTimestamp();
                    NextItem item;
                    using (var r = await SendAsync(HttpMethod.Post, "/next", workerKey, next, stop))
                    {
                        if (r.StatusCode == HttpStatusCode.NoContent)
                        {
                            // Without a long-poll, an idle worker would spin on the two cores it shares with the service.
                            await Task.Delay(waitSeconds == 0 ? 5 : 0, stop);
                            continue;
                        }
                        if (r.StatusCode != HttpStatusCode.OK)
                        {
                            await Expect(r, HttpStatusCode.OK, "POST /next");
                        }
                        var answer = await r.Content.ReadFromJsonAsync(FairnessBenchJson.Default.NextAnswer, CancellationToken.None);
                        item = answer!.Items[0];
                    }
                    Report.Record(trace.ClaimLatency, t0);
                    trace.Add(new FairClaim(item.Id, item.JobId, item.Tenant, trace.Now));
                    await Task.Delay(workMs, CancellationToken.None);
                    await inFlight.WaitAsync(CancellationToken.None);
                    var finish = CompleteAsync(trace, item, inFlight);
                    if (completionsInFlight == 0)
                    {
                        await finish;
                        continue;
                    }
                    finishing.RemoveAll(t => t.IsCompletedSuccessfully);
                    finishing.Add(finish);
                }
            }
            catch (OperationCanceledException) when (stop.IsCancellationRequested)
            {
            }
            await Task.WhenAll(finishing);
        })));
    }

    private async Task CompleteAsync(FairTrace trace, NextItem item, SemaphoreSlim inFlight)
    {
        try
        {
            var t0 = Stopwatch.GetTimestamp();
            var body = JsonSerializer.SerializeToUtf8Bytes(new CompleteBody(item.LeaseToken), FairnessBenchJson.Default.CompleteBody);
            using var r = await SendAsync(HttpMethod.Post, $"/items/{item.Id}/complete", workerKey, body, CancellationToken.None);
            if (r.StatusCode == HttpStatusCode.Conflict)
            {
                Interlocked.Increment(ref trace.Stale);
                return;
            }
            await Expect(r, HttpStatusCode.NoContent, "complete");
            Report.Record(trace.CompleteLatency, t0);
            trace.Add(new FairCompletion(item.Id, item.JobId, trace.Now), item.Tenant);
        }
        finally
        {
            inFlight.Release();
        }
    }

    /// <summary>503 + Retry-After is the documented overload answer: wait (at most a second) and send again, up to 50 times.</summary>
    private async Task<HttpResponseMessage> SendAsync(HttpMethod method, string path, string key, byte[] body, CancellationToken ct)
    {
        for (var attempt = 0; ; attempt++)
        {
            using var request = new HttpRequestMessage(method, new Uri(path, UriKind.Relative)) { Content = new ByteArrayContent(body) };
            request.Headers.Authorization = new AuthenticationHeaderValue("Bearer", key);
            request.Content.Headers.ContentType = Json;
            var r = await http.SendAsync(request, ct);
            if (r.StatusCode != HttpStatusCode.ServiceUnavailable || attempt >= 50)
            {
                return r;
            }
            var wait = r.Headers.RetryAfter?.Delta ?? TimeSpan.FromMilliseconds(100);
            r.Dispose();
            await Task.Delay(wait > TimeSpan.FromSeconds(1) ? TimeSpan.FromSeconds(1) : wait, ct);
        }
    }

    private static async Task Expect(HttpResponseMessage r, HttpStatusCode status, string what)
    {
        if (r.StatusCode != status)
        {
            throw new InvalidOperationException($"{what} answered {(int)r.StatusCode}: {await r.Content.ReadAsStringAsync()}");
        }
        // Read to the end so the connection goes back to the pool instead of being drained or dropped on dispose.
        await r.Content.CopyToAsync(Stream.Null);
    }
}

internal sealed record NextBody(string Worker, string[] Tasks, int Max, int Wait);

internal sealed record NextAnswer(List<NextItem> Items);

internal sealed record NextItem(long Id, string LeaseToken, long JobId, string Tenant);

internal sealed record CompleteBody(string LeaseToken);

internal sealed record NewJobBody(string Name, string[] Tasks, List<NewDocument> Documents);

internal sealed record NewDocument(string Name, string Content);

[JsonSourceGenerationOptions(PropertyNamingPolicy = JsonKnownNamingPolicy.CamelCase)]
[JsonSerializable(typeof(NextBody))]
[JsonSerializable(typeof(NextAnswer))]
[JsonSerializable(typeof(CompleteBody))]
[JsonSerializable(typeof(NewJobBody))]
internal sealed partial class FairnessBenchJson : JsonSerializerContext;
