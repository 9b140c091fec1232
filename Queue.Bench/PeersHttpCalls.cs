using System.Buffers;
using System.Collections.Concurrent;
using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Http.Headers;
using System.Text;
using System.Text.Json;

namespace Queue.Bench;

/// <summary>
/// The peers workload's calls as raw HttpClient requests: pre-encoded bodies, hand-parsed answers, 503 retried after
/// Retry-After. One client for every call; the key goes on each request because customers and workers use different keys.
/// </summary>
/// <param name="exchange">
/// Each completion claims the worker's next item in the same call (CONTRACT v1.3, <c>next</c>); the worker's next
/// claim then takes that item without a call of its own, and POST /next goes out only when a completion brought none.
/// </param>
internal sealed class PeersHttpCalls(HttpClient http, string customerKey, string workerKey, bool exchange = false) : IPeersCalls
{
    private static readonly MediaTypeHeaderValue Json = new("application/json");

    private static readonly JsonEncodedText NameField = JsonEncodedText.Encode("name");
    private static readonly JsonEncodedText ContentTypeField = JsonEncodedText.Encode("contentType");
    private static readonly JsonEncodedText ContentField = JsonEncodedText.Encode("content");
    private static readonly JsonEncodedText JsonType = JsonEncodedText.Encode("application/json");

    private readonly ConcurrentBag<ArrayBufferWriter<byte>> bodies = [];
    private long retried503;

    public long Retried503 => Interlocked.Read(ref retried503);

    public async Task<long> CreateJobAsync(string task, long first, int count, string? idempotencyKey, long deadline)
    {
        // A body buffer per call in flight, reused: a fresh 1.4 MB array per 1,000-document call cost the load
        // generator page faults and zeroing, on the same two cores as the service it measures.
        if (!bodies.TryTake(out var body))
        {
            body = new ArrayBufferWriter<byte>((count * 1420) + 256);
        }
        try
        {
            WriteJobBody(body, task, first, count);
            using var r = await SendRetryingAsync(() => Request(HttpMethod.Post, "/jobs", customerKey, body.WrittenMemory, idempotencyKey), deadline);
            await Expect(r, HttpStatusCode.Created, "POST /jobs");
            var location = r.Headers.Location?.OriginalString ?? throw new InvalidOperationException("POST /jobs answered without Location");
            return long.Parse(location.AsSpan(location.LastIndexOf('/') + 1), CultureInfo.InvariantCulture);
        }
        finally
        {
            body.ResetWrittenCount();
            bodies.Add(body);
        }
    }

    public Func<long, Task<Func<Task>?>> Claimer(int worker, string task)
    {
        var next = $$"""{"worker":"peers-{{worker}}","tasks":["{{task}}"],"max":1,"wait":0}""";
        var body = Encoding.UTF8.GetBytes(next);
        if (!exchange)
        {
            return async deadline => await NextAsync(body, deadline) is { } it ? () => CompleteAsync(it.Id, it.Token, deadline) : null;
        }
        // The items the worker's completions claimed (more than one only while completions overlap, as in the warm-up).
        var pending = new ConcurrentQueue<(long Id, string Token)>();
        return async deadline =>
        {
            var it = pending.TryDequeue(out var claimed) ? claimed : await NextAsync(body, deadline);
            return it is { } item ? async () =>
            {
                if (await CompleteAndClaimAsync(item.Id, item.Token, next, deadline) is { } following)
                {
                    pending.Enqueue(following);
                }
            } : null;
        };
    }

    /// <summary>DELETE /jobs/{id}: takes a phase's items out of the queue, as the peers truncate between phases.</summary>
    public async Task CancelAsync(long jobId)
    {
        using var request = Request(HttpMethod.Delete, $"/jobs/{jobId}", customerKey, null, null);
        using var r = await http.SendAsync(request);
        await Expect(r, HttpStatusCode.OK, "DELETE /jobs/{id}");
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

    private async Task<(long Id, string Token)?> CompleteAndClaimAsync(long id, string token, string next, long deadline)
    {
        var body = Encoding.UTF8.GetBytes($$"""{"leaseToken":"{{token}}","next":{{next}}}""");
        using var r = await SendRetryingAsync(() => Request(HttpMethod.Post, $"/items/{id}/complete", workerKey, body, null), deadline);
        if (r.StatusCode != HttpStatusCode.OK)
        {
            throw new InvalidOperationException($"complete with next answered {(int)r.StatusCode}: {await r.Content.ReadAsStringAsync()}");
        }
        using var json = await JsonDocument.ParseAsync(await r.Content.ReadAsStreamAsync());
        var items = json.RootElement.GetProperty("items");
        return items.GetArrayLength() == 0 ? null : (items[0].GetProperty("id").GetInt64(), items[0].GetProperty("leaseToken").GetString()!);
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

    private static HttpRequestMessage Request(HttpMethod method, string path, string key, ReadOnlyMemory<byte>? body, string? idempotencyKey)
    {
        var request = new HttpRequestMessage(method, new Uri(path, UriKind.Relative));
        request.Headers.Authorization = new AuthenticationHeaderValue("Bearer", key);
        if (idempotencyKey is not null)
        {
            request.Headers.Add("Idempotency-Key", idempotencyKey);
        }
        if (body is { } bytes)
        {
            request.Content = new ReadOnlyMemoryContent(bytes);
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

    /// <summary>One job of <paramref name="count"/> inline documents, numbered from <paramref name="first"/>, into <paramref name="buffer"/>.</summary>
    private static void WriteJobBody(ArrayBufferWriter<byte> buffer, string task, long first, int count)
    {
        Span<byte> doc = stackalloc byte[PeersDocument.MaxLength];
        using var w = new Utf8JsonWriter(buffer);
        w.WriteStartObject();
        w.WriteString(NameField, PeersDocument.JobName(task, first));
        w.WriteStartArray("tasks");
        w.WriteStringValue(task);
        w.WriteEndArray();
        w.WriteStartArray("documents");
        for (var k = 0; k < count; k++)
        {
            w.WriteStartObject();
            w.WriteString(NameField, PeersDocument.Name(first + k));
            w.WriteString(ContentTypeField, JsonType);
            w.WriteBase64String(ContentField, doc[..PeersDocument.Write(first + k, doc)]);
            w.WriteEndObject();
        }
        w.WriteEndArray();
        w.WriteEndObject();
    }
}
