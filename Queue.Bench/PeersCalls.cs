using System.Globalization;
using Queue.Client;

namespace Queue.Bench;

/// <summary>
/// How the peers workload reaches Queue: raw HttpClient calls (<see cref="PeersHttpCalls"/>, the default) or
/// Queue.Client (<see cref="PeersClientCalls"/>, <c>--client</c>), so the two can be compared on the same loops.
/// </summary>
internal interface IPeersCalls
{
    /// <summary>Calls answered 503 and retried after Retry-After: a sign of overload worth printing.</summary>
    long Retried503 { get; }

    /// <summary>POST /jobs of one job with <paramref name="count"/> inline documents numbered from <paramref name="first"/>; its id.</summary>
    Task<long> CreateJobAsync(string task, long first, int count, string? idempotencyKey, long deadline);

    /// <summary>
    /// Worker <paramref name="worker"/>'s POST /next (max 1, wait 0): null when nothing came, else the call that
    /// completes the claimed item. Made once per worker so per-worker request parts are built once.
    /// </summary>
    Func<long, Task<Func<Task>?>> Claimer(int worker, string task);

    /// <summary>DELETE /jobs/{id}.</summary>
    Task CancelAsync(long jobId);
}

/// <summary>The peer's document, <c>{"i": n, "pad": "x" * 1000}</c>, the same bytes on both paths.</summary>
internal static class PeersDocument
{
    /// <summary>Room for the largest document: the pad, the wrapping and a 20-digit number.</summary>
    public const int MaxLength = 1100;

    private static readonly byte[] Pad = Enumerable.Repeat((byte)'x', 1000).ToArray();

    public static string Name(long n) => n.ToString(CultureInfo.InvariantCulture) + ".json";

    public static byte[] Content(long n)
    {
        Span<byte> doc = stackalloc byte[MaxLength];
        return doc[..Write(n, doc)].ToArray();
    }

    /// <summary>Writes document <paramref name="n"/> into <paramref name="into"/> (at least <see cref="MaxLength"/>); its length.</summary>
    public static int Write(long n, Span<byte> into)
    {
        var at = Put(into, 0, "{\"i\":"u8);
        n.TryFormat(into[at..], out var digits, provider: CultureInfo.InvariantCulture);
        at = Put(into, at + digits, ",\"pad\":\""u8);
        at = Put(into, at, Pad);
        return Put(into, at, "\"}"u8);
    }

    private static int Put(Span<byte> into, int at, ReadOnlySpan<byte> bytes)
    {
        bytes.CopyTo(into[at..]);
        return at + bytes.Length;
    }

    public static string JobName(string task, long first) => task + "-" + first.ToString(CultureInfo.InvariantCulture);
}

/// <summary>
/// The workload through <see cref="QueueClient"/>: its JSON, its per-request key header, its retries and its own
/// Idempotency-Key on every submit, so what the bench measures is what a customer's program would pay.
/// </summary>
internal sealed class PeersClientCalls : IPeersCalls, IDisposable
{
    private readonly HttpClient http;
    private readonly QueueClient customer;
    private readonly QueueClient worker;
    private long retried503;

    public PeersClientCalls(Uri baseAddress, string customerKey, string workerKey)
    {
        QueueClientOptions Options(string key) => new()
        {
            BaseAddress = baseAddress,
            ApiKey = key,
            // As the raw path: up to 50 retries a second apart at most, so overload shows as a slow phase, not a crash.
            MaxRetries = 50,
            MaxRetryDelay = TimeSpan.FromSeconds(1),
            OnRetry = r =>
            {
                if (r.Status == 503)
                {
                    Interlocked.Increment(ref retried503);
                }
            },
        };
        var customerOptions = Options(customerKey);
        // One pooled HttpClient with the client's own handler settings for both keys: the key travels per request.
        http = new HttpClient(QueueHttp.CreateHandler(customerOptions));
        customer = new QueueClient(http, customerOptions);
        worker = new QueueClient(http, Options(workerKey));
    }

    public long Retried503 => Interlocked.Read(ref retried503);

    public async Task<long> CreateJobAsync(string task, long first, int count, string? idempotencyKey, long deadline)
    {
        var documents = new InlineDocument[count];
        for (var k = 0; k < count; k++)
        {
            documents[k] = new InlineDocument(PeersDocument.Name(first + k), "application/json", PeersDocument.Content(first + k));
        }
        var job = await customer.CreateJobAsync(new NewJob(PeersDocument.JobName(task, first), [task], Documents: documents), idempotencyKey);
        return job.Id;
    }

    public Func<long, Task<Func<Task>?>> Claimer(int worker, string task)
    {
        var name = "peers-" + worker.ToString(CultureInfo.InvariantCulture);
        string[] tasks = [task];
        return async _ =>
        {
            var items = await this.worker.ClaimAsync(tasks, max: 1, wait: TimeSpan.Zero, worker: name);
            return items.Count == 0 ? null : () => this.worker.CompleteAsync(items[0]);
        };
    }

    public async Task CancelAsync(long jobId) => await customer.CancelJobAsync(jobId);

    public void Dispose()
    {
        customer.Dispose();
        worker.Dispose();
        http.Dispose();
    }
}
