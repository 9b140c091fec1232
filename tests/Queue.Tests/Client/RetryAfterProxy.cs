using System.Collections.Concurrent;
using System.Diagnostics;
using System.Net;
using System.Net.Http.Headers;
using Queue.Local;

namespace Queue.Tests.Client;

/// <summary>
/// An HTTP proxy in front of the Api that answers the first request with <paramref name="status"/> and
/// <c>Retry-After: <paramref name="retryAfterSeconds"/></c> (a balancer shedding load, or a rate limit), then forwards
/// every request, recording what it saw.
/// </summary>
public sealed class RetryAfterProxy(Uri upstream, int status, int retryAfterSeconds) : IAsyncDisposable
{
    private static readonly HashSet<string> HopHeaders = new(StringComparer.OrdinalIgnoreCase)
    {
        "Host", "Connection", "Keep-Alive", "Transfer-Encoding", "Content-Length", "Content-Type", "Date", "Server",
    };

    private readonly HttpListener listener = new();
    private readonly HttpClient forwarder = new() { BaseAddress = upstream };
    private Task serving = Task.CompletedTask;
    private int refused;

    public Uri BaseAddress { get; private set; } = null!;

    /// <summary>Every request, in arrival order.</summary>
    public ConcurrentQueue<SeenRequest> Requests { get; } = new();

    public void Start()
    {
        var port = PrivateMariaDb.FreePort();
        BaseAddress = new Uri($"http://127.0.0.1:{port}/");
        listener.Prefixes.Add(BaseAddress.ToString());
        listener.Start();
        serving = ServeAsync();
    }

    private async Task ServeAsync()
    {
        while (true)
        {
            HttpListenerContext context;
            try
            {
                context = await listener.GetContextAsync();
            }
            catch (Exception e) when (e is HttpListenerException or ObjectDisposedException or InvalidOperationException)
            {
                return; // stopped
            }
            _ = HandleAsync(context);
        }
    }

    private async Task HandleAsync(HttpListenerContext context)
    {
        var (request, response) = (context.Request, context.Response);
        using var body = new MemoryStream();
        await request.InputStream.CopyToAsync(body);
        Requests.Enqueue(new SeenRequest(request.HttpMethod, request.RawUrl ?? "", request.Headers["Idempotency-Key"], Stopwatch.GetTimestamp()));
        if (Interlocked.Exchange(ref refused, 1) == 0)
        {
            response.StatusCode = status;
            response.Headers["Retry-After"] = retryAfterSeconds.ToString(System.Globalization.CultureInfo.InvariantCulture);
            response.Close();
            return;
        }
        using var forward = new HttpRequestMessage(new HttpMethod(request.HttpMethod), request.RawUrl);
        if (request.HasEntityBody)
        {
            forward.Content = new ByteArrayContent(body.ToArray());
            if (request.ContentType is { } type)
            {
                forward.Content.Headers.ContentType = MediaTypeHeaderValue.Parse(type);
            }
        }
        foreach (var name in request.Headers.AllKeys.OfType<string>().Where(n => !HopHeaders.Contains(n)))
        {
            forward.Headers.TryAddWithoutValidation(name, request.Headers.GetValues(name) ?? []);
        }
        using var answer = await forwarder.SendAsync(forward);
        var bytes = await answer.Content.ReadAsByteArrayAsync();
        response.StatusCode = (int)answer.StatusCode;
        foreach (var (name, values) in answer.Headers.Where(h => !HopHeaders.Contains(h.Key)))
        {
            response.Headers[name] = string.Join(", ", values);
        }
        response.ContentType = answer.Content.Headers.ContentType?.ToString();
        response.ContentLength64 = bytes.Length;
        await response.OutputStream.WriteAsync(bytes);
        response.Close();
    }

    public async ValueTask DisposeAsync()
    {
        listener.Stop();
        listener.Close();
        await serving;
        forwarder.Dispose();
    }
}
