using System.Buffers;
using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Http.Headers;
using System.Text;
using System.Text.Json;
using HdrHistogram;
using Queue.Bench.Harness;

namespace Queue.Bench;

/// <summary>
/// The peers workload (../shared/peers/README.md) driven against Queue.Api over HTTP: one-item jobs whose document is
/// <c>{"i": n, "pad": "x" * 1000}</c>, created with POST /jobs and drained with POST /next (max 1) and complete.
/// One client for every call; the key goes on each request because customers and workers use different keys.
/// </summary>
internal sealed class PeersWorkload(HttpClient http, string customerKey, string workerKey)
{
    private static readonly string Pad = new('x', 1000);
    private static readonly MediaTypeHeaderValue Json = new("application/json");

    /// <summary>Calls answered 503 and retried after Retry-After: a sign of overload worth printing.</summary>
    public long Retried503 => Interlocked.Read(ref retried503);

    private long retried503;

    /// <summary>
    /// Creates <paramref name="total"/> items in calls of <paramref name="perCall"/> documents (one job per call) from
    /// <paramref name="producers"/> concurrent loops, stopping at the count or at <paramref name="cap"/>.
    /// </summary>
    public async Task<EnqueueResult> EnqueueAsync(string task, long total, int perCall, int producers, TimeSpan cap, string? idempotencyPrefix)
    {
        var calls = (int)((total + perCall - 1) / perCall);
        var ends = new long[calls];
        var latencies = new long[calls];
        var ids = new long[calls];
        var histogram = Report.NewHistogram();
        long nextCall = -1, finished = -1, items = 0;
        var capped = false;
        var start = Stopwatch.GetTimestamp();
        var deadline = start + (long)(cap.TotalSeconds * Stopwatch.Frequency);
        await Task.WhenAll(Enumerable.Range(0, producers).Select(_ => Task.Run(async () =>
        {
            while (true)
            {
                if (Stopwatch.GetTimestamp() > deadline)
                {
                    capped = true;
                    return;
                }
                var call = Interlocked.Increment(ref nextCall);
                if (call >= calls)
                {
                    return;
                }
                var first = call * perCall;
                var count = (int)Math.Min(perCall, total - first);
                var body = JobBody(task, first, count);
                var t0 = Stopwatch.GetTimestamp();
                var id = await CreateJobAsync(body, idempotencyPrefix is null ? null : idempotencyPrefix + "-" + call.ToString(CultureInfo.InvariantCulture), deadline);
                var t1 = Stopwatch.GetTimestamp();
                Report.Record(histogram, t0);
                var k = Interlocked.Increment(ref finished);
                ends[k] = t1;
                latencies[k] = Math.Max(1, (long)Stopwatch.GetElapsedTime(t0, t1).TotalMicroseconds);
                ids[k] = id;
                Interlocked.Add(ref items, count);
            }
        })));
        var done = (int)(finished + 1);
        return new EnqueueResult(items, Stopwatch.GetElapsedTime(start).TotalSeconds, capped, histogram, start, ends[..done], latencies[..done], ids[..done]);
    }

    /// <summary>DELETE /jobs/{id}: takes a phase's items out of the queue, as the peers truncate between phases.</summary>
    public async Task CancelAsync(IEnumerable<long> jobIds)
    {
        foreach (var id in jobIds)
        {
            using var request = Request(HttpMethod.Delete, $"/jobs/{id}", customerKey, null, null);
            using var r = await http.SendAsync(request);
            await Expect(r, HttpStatusCode.OK, "DELETE /jobs/{id}");
        }
    }

    /// <summary>
    /// <paramref name="workers"/> loops of POST /next (max 1, wait 0) then complete, until every one of the
    /// <paramref name="queued"/> items was claimed or <paramref name="cap"/> passed. A 204 while items are still
    /// unclaimed is counted and retried after 5 ms, so a momentary empty answer does not end a worker early.
    /// </summary>
    public async Task<DrainResult> DrainAsync(string task, int workers, long queued, TimeSpan cap)
    {
        var claims = Report.NewHistogram();
        var completes = Report.NewHistogram();
        long claimed = 0, completed = 0, emptyWhileQueued = 0;
        var start = Stopwatch.GetTimestamp();
        var deadline = start + (long)(cap.TotalSeconds * Stopwatch.Frequency);
        await Task.WhenAll(Enumerable.Range(0, workers).Select(w => Task.Run(async () =>
        {
            var body = Encoding.UTF8.GetBytes($$"""{"worker":"peers-{{w}}","tasks":["{{task}}"],"max":1,"wait":0}""");
            while (Stopwatch.GetTimestamp() < deadline && Interlocked.Read(ref claimed) < queued)
            {
                var t0 = Stopwatch.GetTimestamp();
                var item = await NextAsync(body, deadline);
                Report.Record(claims, t0);
                if (item is not { } it)
                {
                    if (Interlocked.Read(ref claimed) >= queued)
                    {
                        return;
                    }
                    Interlocked.Increment(ref emptyWhileQueued);
                    await Task.Delay(5);
                    continue;
                }
                Interlocked.Increment(ref claimed);
                var t1 = Stopwatch.GetTimestamp();
                await CompleteAsync(it.Id, it.Token, deadline);
                Report.Record(completes, t1);
                Interlocked.Increment(ref completed);
            }
        })));
        var seconds = Stopwatch.GetElapsedTime(start).TotalSeconds;
        return new DrainResult(workers, queued, completed, seconds, completed < queued, claims, completes, emptyWhileQueued);
    }

    private async Task<long> CreateJobAsync(byte[] body, string? idempotencyKey, long deadline)
    {
        using var r = await SendRetryingAsync(() => Request(HttpMethod.Post, "/jobs", customerKey, body, idempotencyKey), deadline);
        await Expect(r, HttpStatusCode.Created, "POST /jobs");
        var location = r.Headers.Location?.OriginalString ?? throw new InvalidOperationException("POST /jobs answered without Location");
        return long.Parse(location.AsSpan(location.LastIndexOf('/') + 1), CultureInfo.InvariantCulture);
    }

    private async Task<(long Id, string Token)?> NextAsync(byte[] body, long deadline)
    {
        using var r = await SendRetryingAsync(() => Request(HttpMethod.Post, "/next", workerKey, body, null), deadline);
        if (r.StatusCode == HttpStatusCode.NoContent)
        {
            return null;
        }
        await Expect(r, HttpStatusCode.OK, "POST /next");
        using var json = await JsonDocument.ParseAsync(await r.Content.ReadAsStreamAsync());
        var item = json.RootElement.GetProperty("items")[0];
        return (item.GetProperty("id").GetInt64(), item.GetProperty("leaseToken").GetString()!);
    }

    private async Task CompleteAsync(long id, string token, long deadline)
    {
        var body = Encoding.UTF8.GetBytes($$"""{"leaseToken":"{{token}}"}""");
        using var r = await SendRetryingAsync(() => Request(HttpMethod.Post, $"/items/{id}/complete", workerKey, body, null), deadline);
        await Expect(r, HttpStatusCode.NoContent, "complete");
    }

    /// <summary>
    /// 503 + Retry-After is the documented overload answer: wait and send again, at most 50 times and never past the
    /// phase's cap plus a minute, so an overloaded service shows up as a slow phase rather than a crash.
    /// </summary>
    private async Task<HttpResponseMessage> SendRetryingAsync(Func<HttpRequestMessage> make, long deadline)
    {
        var giveUp = deadline + (60 * Stopwatch.Frequency);
        for (var attempt = 0; ; attempt++)
        {
            using var request = make();
            var r = await http.SendAsync(request);
            if (r.StatusCode != HttpStatusCode.ServiceUnavailable || attempt >= 50 || Stopwatch.GetTimestamp() > giveUp)
            {
                return r;
            }
            var wait = r.Headers.RetryAfter?.Delta ?? TimeSpan.FromMilliseconds(100);
            r.Dispose();
            Interlocked.Increment(ref retried503);
            await Task.Delay(wait > TimeSpan.FromSeconds(1) ? TimeSpan.FromSeconds(1) : wait);
        }
    }

    private static HttpRequestMessage Request(HttpMethod method, string path, string key, byte[]? body, string? idempotencyKey)
    {
        var request = new HttpRequestMessage(method, new Uri(path, UriKind.Relative));
        request.Headers.Authorization = new AuthenticationHeaderValue("Bearer", key);
        if (idempotencyKey is not null)
        {
            request.Headers.Add("Idempotency-Key", idempotencyKey);
        }
        if (body is not null)
        {
            request.Content = new ByteArrayContent(body);
            request.Content.Headers.ContentType = Json;
        }
        return request;
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

    /// <summary>One job of <paramref name="count"/> inline documents, numbered from <paramref name="first"/>.</summary>
    private static byte[] JobBody(string task, long first, int count)
    {
        var buffer = new ArrayBufferWriter<byte>((count * 1420) + 256);
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            w.WriteString("name", task + "-" + first.ToString(CultureInfo.InvariantCulture));
            w.WriteStartArray("tasks");
            w.WriteStringValue(task);
            w.WriteEndArray();
            w.WriteStartArray("documents");
            for (var k = 0; k < count; k++)
            {
                var n = (first + k).ToString(CultureInfo.InvariantCulture);
                w.WriteStartObject();
                w.WriteString("name", n + ".json");
                w.WriteString("contentType", "application/json");
                w.WriteBase64String("content", Encoding.UTF8.GetBytes($$"""{"i":{{n}},"pad":"{{Pad}}"}"""));
                w.WriteEndObject();
            }
            w.WriteEndArray();
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }
}

/// <summary>An enqueue phase; per call, in order of completion: end timestamp, latency (µs) and the job's id.</summary>
internal sealed record EnqueueResult(long Items, double Seconds, bool Capped, HistogramBase Latency, long Start, long[] Ends, long[] Latencies, long[] JobIds)
{
    public double PerSecond => Items / Seconds;

    /// <summary>Rate (calls/s) and p50/p99 (ms) of the calls finishing <paramref name="from"/> to <paramref name="to"/> - 1:
    /// with nothing draining, the number of jobs queued while they ran.</summary>
    public (double Rate, double P50, double P99) Window(int from, int to)
    {
        var begin = from == 0 ? Start : Ends[from - 1];
        var seconds = Stopwatch.GetElapsedTime(begin, Ends[to - 1]).TotalSeconds;
        var sorted = Latencies[from..to];
        Array.Sort(sorted);
        double At(double p) => sorted[Math.Clamp((int)Math.Ceiling(p / 100 * sorted.Length) - 1, 0, sorted.Length - 1)] / 1000.0;
        return ((to - from) / Math.Max(seconds, 1e-6), At(50), At(99));
    }
}

internal sealed record DrainResult(int Workers, long Queued, long Completed, double Seconds, bool Capped, HistogramBase Claims, HistogramBase Completes, long EmptyWhileQueued)
{
    public double PerSecond => Completed / Seconds;
}
