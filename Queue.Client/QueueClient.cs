using System.Net;
using System.Net.Http.Headers;
using System.Text.Json.Serialization.Metadata;

namespace Queue.Client;

/// <summary>
/// A typed client for all of docs/CONTRACT.md. Thread-safe; make one per process (or let <c>AddQueueClient</c> do it). Every
/// call retries 503, 429, 502/504 and dropped connections with backoff (Retry-After first), and every submit or upload
/// carries an Idempotency-Key, so a retry never creates a second job or document.
/// </summary>
public sealed partial class QueueClient : IDisposable
{
    private const string IdempotencyHeader = "Idempotency-Key";
    private readonly HttpClient http;
    private readonly bool ownsHttp;

    /// <summary>Over an <see cref="HttpClient"/> from IHttpClientFactory (or any); its BaseAddress wins if set.</summary>
    public QueueClient(HttpClient http, QueueClientOptions options)
    {
        this.http = http;
        Options = options;
        var baseAddress = http.BaseAddress ?? options.BaseAddress ?? throw new ArgumentException("a base address is required", nameof(options));
        // A base path such as /queue/ must keep its last segment when relative paths are resolved against it.
        http.BaseAddress = baseAddress.AbsoluteUri.EndsWith('/') ? baseAddress : new Uri(baseAddress.AbsoluteUri + "/");
        // Long-polls and streamed transfers outlive HttpClient's 100 s default; callers bound calls with their token.
        if (http.Timeout == TimeSpan.FromSeconds(100))
        {
            http.Timeout = Timeout.InfiniteTimeSpan;
        }
    }

    /// <summary>Standalone, with its own pooled <see cref="SocketsHttpHandler"/>.</summary>
    public QueueClient(QueueClientOptions options) : this(new HttpClient(QueueHttp.CreateHandler(options)), options) => ownsHttp = true;

    public QueueClient(Uri baseAddress, string apiKey) : this(new QueueClientOptions { BaseAddress = baseAddress, ApiKey = apiKey })
    {
    }

    public QueueClientOptions Options { get; }

    public void Dispose()
    {
        if (ownsHttp)
        {
            http.Dispose();
        }
    }

    /// <summary>Sends what <paramref name="build"/> makes, again on each retry, and returns the first answer that is not retried.</summary>
    internal async Task<HttpResponseMessage> SendAsync(Func<HttpRequestMessage> build, CancellationToken ct,
        HttpCompletionOption completion = HttpCompletionOption.ResponseContentRead)
    {
        for (var attempt = 1; ; attempt++)
        {
            using var request = build();
            if (Options.ApiKey is { } key && http.DefaultRequestHeaders.Authorization is null)
            {
                request.Headers.Authorization = new AuthenticationHeaderValue("Bearer", key);
            }
            HttpResponseMessage? response = null;
            Exception? error = null;
            try
            {
                response = await http.SendAsync(request, completion, ct);
                if (!await IsRetryableAsync(request, response))
                {
                    return response;
                }
            }
            catch (HttpRequestException e) when (!ct.IsCancellationRequested)
            {
                error = e; // refused, reset or closed mid-request: the classic dropped pooled connection
            }
            catch (IOException e) when (!ct.IsCancellationRequested)
            {
                error = e;
            }
            if (attempt > Options.MaxRetries)
            {
                return response ?? throw new QueueApiException($"{request.Method} {request.RequestUri}: no answer after {attempt} attempts", error);
            }
            var delay = Backoff(attempt, response);
            Options.OnRetry?.Invoke(new QueueRetry(request.Method.Method, request.RequestUri?.OriginalString ?? "", attempt, delay,
                response is null ? null : (int)response.StatusCode, error));
            response?.Dispose();
            await Task.Delay(delay, ct);
        }
    }

    private static async Task<bool> IsRetryableAsync(HttpRequestMessage request, HttpResponseMessage response)
    {
        switch (response.StatusCode)
        {
            case HttpStatusCode.ServiceUnavailable or HttpStatusCode.TooManyRequests or HttpStatusCode.BadGateway or HttpStatusCode.GatewayTimeout:
                return true;
            case HttpStatusCode.Conflict when request.Headers.Contains(IdempotencyHeader):
                // The first attempt of this very request may still run on the server (its connection dropped): wait for it,
                // then the replay answers. Other 409s (closed job) are final.
                await response.Content.LoadIntoBufferAsync();
                return (await response.Content.ReadAsStringAsync()).Contains("still being processed", StringComparison.Ordinal);
            default:
                return false;
        }
    }

    private TimeSpan Backoff(int attempt, HttpResponseMessage? response)
    {
        var retryAfter = response?.Headers.RetryAfter;
        var delay = retryAfter?.Delta
            ?? (retryAfter?.Date is { } at ? at - DateTimeOffset.UtcNow : (TimeSpan?)null)
            ?? Options.RetryBaseDelay * Math.Pow(2, attempt - 1) * (0.8 + (0.4 * Random.Shared.NextDouble()));
        return delay < TimeSpan.Zero ? TimeSpan.Zero : delay > Options.MaxRetryDelay ? Options.MaxRetryDelay : delay;
    }

    internal async Task<T> ReadAsync<T>(Func<HttpRequestMessage> build, JsonTypeInfo<T> type, CancellationToken ct)
    {
        using var response = await SendAsync(build, ct);
        await EnsureSuccessAsync(response, ct);
        return await ReadJsonAsync(response, type, ct);
    }

    internal async Task SendNoContentAsync(Func<HttpRequestMessage> build, CancellationToken ct)
    {
        using var response = await SendAsync(build, ct);
        await EnsureSuccessAsync(response, ct);
    }

    internal static async Task<T> ReadJsonAsync<T>(HttpResponseMessage response, JsonTypeInfo<T> type, CancellationToken ct)
    {
        await using var body = await response.Content.ReadAsStreamAsync(ct);
        return await System.Text.Json.JsonSerializer.DeserializeAsync(body, type, ct)
            ?? throw new QueueApiException($"{(int)response.StatusCode}: an empty body where JSON was expected");
    }

    /// <summary>Turns any error answer into one <see cref="QueueApiException"/> carrying its ProblemDetails.</summary>
    internal static async Task EnsureSuccessAsync(HttpResponseMessage response, CancellationToken ct)
    {
        if (response.IsSuccessStatusCode)
        {
            return;
        }
        var text = await response.Content.ReadAsStringAsync(ct);
        ProblemBody? body = null;
        try
        {
            body = text.Length > 0 ? System.Text.Json.JsonSerializer.Deserialize(text, QueueJsonContext.Default.ProblemBody) : null;
        }
        catch (System.Text.Json.JsonException)
        {
            // Not ProblemDetails (a proxy's HTML page, say): the raw text still explains it.
        }
        var status = (int)response.StatusCode;
        throw new QueueApiException(response.StatusCode, body is null
            ? new QueueProblem(null, response.ReasonPhrase, status, text.Length > 500 ? text[..500] : text, null)
            : new QueueProblem(body.Type, body.Title, body.Status ?? status, body.Detail, body.Errors));
    }

    internal static HttpRequestMessage Request(HttpMethod method, string path, HttpContent? content = null, string? idempotencyKey = null)
    {
        var request = new HttpRequestMessage(method, new Uri(path, UriKind.Relative)) { Content = content };
        if (idempotencyKey is not null)
        {
            request.Headers.Add(IdempotencyHeader, idempotencyKey);
        }
        return request;
    }

    internal static HttpContent Json<T>(T value, JsonTypeInfo<T> type) => System.Net.Http.Json.JsonContent.Create(value, type);
}
