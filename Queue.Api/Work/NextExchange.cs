using Microsoft.AspNetCore.Http.Timeouts;
using Microsoft.Extensions.Options;
using Queue.Api.Infrastructure;
using Queue.Core.Claims;
using Queue.Core.Data;
using Queue.Core.Work;

namespace Queue.Api.Work;

/// <summary>
/// The <c>next</c> of a complete or fail (docs/CONTRACT.md v1.3 "Finish and claim in one exchange"): once the finish is
/// recorded, the same request claims as <c>POST /next</c> would, through the same <see cref="NextService"/> (claim-ahead
/// buffer, grouped claim transactions, fairness, long-poll, <c>requestId</c> replays), and answers its items. The finish
/// and the claim are two commits in one HTTP exchange, not one transaction (docs/DESIGN.md "Finish and claim in one
/// exchange"): so from the finish's commit on, the answer is always 200, and a claim that is busy or runs out of time
/// answers no items (with <c>Retry-After</c>) rather than an error that would hide the recorded finish.
/// </summary>
public sealed partial class NextExchange(NextService next, IOptions<ApiLimitsOptions> limits, ILogger<NextExchange> logger)
{
    /// <summary>Exchanges long-polling now; past half the Api's <see cref="ApiLimitsOptions.MaxConcurrentRequests"/> a new one does not wait.</summary>
    private int waiting;

    public int Waiting => Volatile.Read(ref waiting);

    /// <summary>Every bad field of a /next body, as /next names them.</summary>
    public static Dictionary<string, string[]> Errors(NextRequest body)
    {
        var errors = WorkValidation.Next(body.Worker, body.Tasks, body.Max, body.Wait, body.Lease);
        if (body.RequestId is { Length: < 1 or > 100 })
        {
            errors["requestId"] = ["must be 1 to 100 characters"];
        }
        return errors;
    }

    /// <summary>Adds the bad fields of a finish's <c>next</c> to <paramref name="errors"/>, named <c>next.max</c> and so on.</summary>
    public static void Validate(NextRequest? body, Dictionary<string, string[]> errors)
    {
        if (body is null)
        {
            return;
        }
        foreach (var (field, messages) in Errors(body))
        {
            errors["next." + field] = messages;
        }
    }

    public static ClaimRequest Claim(NextRequest body) => new(string.IsNullOrEmpty(body.Worker) ? null : body.Worker,
        (body.Tasks ?? []).Distinct(StringComparer.Ordinal).ToList(), body.Max ?? 1, body.Lease ?? 300);

    /// <summary>The call's <c>requestId</c> scoped by the caller's key, so two workers' ids never meet.</summary>
    public static string? RequestId(NextRequest body, HttpContext http) =>
        body.RequestId is null ? null : $"{http.User.FindFirst(ApiKeyAuthenticationHandler.KeyClaim)?.Value}/{body.RequestId}";

    /// <summary>The next items after a finish that is recorded: always 200, with no items when none came or the claim failed.</summary>
    public async Task<JsonOk<NextResponse>> NextAsync(NextRequest body, HttpContext http, CancellationToken ct)
    {
        // The finish has committed: a request timeout now would answer 503 and hide it. The claim is bounded below instead.
        http.Features.Get<IHttpRequestTimeoutFeature>()?.DisableTimeout();
        var wait = TimeSpan.FromSeconds(body.Wait ?? 0);
        var holdsWait = false;
        if (wait > TimeSpan.Zero)
        {
            // An exchange waits holding one of the Api's request permits (a /next holds a poll permit): at most half of
            // them wait, so waiting exchanges never crowd out the completions that need the others.
            holdsWait = Interlocked.Increment(ref waiting) <= Math.Max(1, limits.Value.MaxConcurrentRequests / 2);
            if (!holdsWait)
            {
                Interlocked.Decrement(ref waiting);
                wait = TimeSpan.Zero;
            }
        }
        using var bound = CancellationTokenSource.CreateLinkedTokenSource(ct);
        bound.CancelAfter(wait + TimeSpan.FromSeconds(limits.Value.RequestTimeoutSeconds));
        IReadOnlyList<TakenItem> items = [];
        try
        {
            items = await next.NextAsync(Claim(body), wait, RequestId(body, http), bound.Token);
            ApiMetrics.Claims.Inc(items.Count);
        }
        catch (Exception ex) when (ex is ServiceBusyException or MySqlConnector.MySqlException or TimeoutException or IOException
            || (ex is OperationCanceledException && !ct.IsCancellationRequested))
        {
            // Nothing was handed out (a caller that leaves gives its items back): say so, and when to ask again.
            LogClaimFailed(logger, ex.Message);
            http.Response.Headers.RetryAfter = "1";
        }
        finally
        {
            if (holdsWait)
            {
                Interlocked.Decrement(ref waiting);
            }
        }
        return new JsonOk<NextResponse>(new NextResponse(items.Select(WorkerApi.ToDto).ToList()));
    }

    [LoggerMessage(EventId = 3101, Level = LogLevel.Information, Message = "The claim of a finish's next answered no items: {Reason}")]
    private static partial void LogClaimFailed(ILogger logger, string reason);
}
