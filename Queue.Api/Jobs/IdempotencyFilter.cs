using System.Security.Cryptography;
using System.Text;
using System.Text.Json;
using Microsoft.AspNetCore.Http.HttpResults;
using Microsoft.AspNetCore.Http.Json;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Api.Infrastructure;
using Queue.Core.Data;
using Queue.Core.Jobs;

namespace Queue.Api.Jobs;

/// <summary>
/// The Idempotency-Key header (IETF draft) for any customer POST: a first request claims the key; its 2xx answer is stored
/// and replayed (status, Location, body) to a retry with the same fingerprint; a retry while it runs gets 409; the same key
/// with another method, path, Content-Type or body gets 422. Errors before the handler's commit free the key; once it
/// committed (<see cref="IIdempotencyFeature.Committed"/>) the key replays that outcome whatever fails afterwards. A write that may still
/// commit never frees its key: one still running when the handler had to answer keeps it until its outcome is known
/// (<see cref="IIdempotencyFeature.Landing"/>), and one whose COMMIT's outcome could not be learnt keeps it until the stale takeover
/// (docs/DESIGN.md "Writes whose outcome is not known yet"). The fingerprint is a SHA-256 of the body computed as the
/// handler streams it, so the filter never buffers the request.
/// </summary>
public sealed partial class IdempotencyFilter(IdempotencyStore store, IOptions<JsonOptions> json, ILogger<IdempotencyFilter> logger) : IEndpointFilter
{
    public const string Header = "Idempotency-Key";

    private const string ReplayedHeader = "Idempotent-Replayed";

    public async ValueTask<object?> InvokeAsync(EndpointFilterInvocationContext context, EndpointFilterDelegate next)
    {
        var http = context.HttpContext;
        if (!http.Request.Headers.TryGetValue(Header, out var values))
        {
            return await next(context);
        }
        var key = values.Count == 1 ? values[0] : null;
        if (key is null || key.Length is < 1 or > 255)
        {
            return Problems.Validation(Header, "send exactly one key of 1 to 255 characters");
        }
        var tenant = http.User.TenantId();
        var ct = http.RequestAborted;
        var path = http.Request.Path.Value ?? "/";
        var prefix = Encoding.UTF8.GetBytes($"{http.Request.Method}\n{path}{http.Request.QueryString}\n{http.Request.ContentType}\n");
        await using var body = new MeteredStream(http.Request.Body, long.MaxValue, "the request body");
        var claim = await store.BeginAsync(tenant, key, http.Request.Method, path, ct);
        switch (claim.Verdict)
        {
            case IdempotencyVerdict.InFlight:
                return TypedResults.Problem(statusCode: 409, title: "Conflict",
                    detail: "a request with this Idempotency-Key is still being processed; retry after it has finished");
            case IdempotencyVerdict.Completed:
                await body.CopyToAsync(Stream.Null, ct);
                return claim.RequestHash is { } stored && CryptographicOperations.FixedTimeEquals(stored, Fingerprint(prefix, body.Hash()))
                    ? new ReplayResult(claim.Response!)
                    : TypedResults.Problem(statusCode: 422, title: "Unprocessable Content",
                        detail: "this Idempotency-Key was already used for a different request (method, path or body)");
        }
        var scope = new IdempotencyScope(new IdempotencyRun(key, claim.Started), claim.JobId, claim.Documents);
        http.Features.Set<IIdempotencyFeature>(scope);
        http.Request.Body = body;
        object? result;
        try
        {
            result = await next(context);
        }
        catch (Exception ex)
        {
            if (scope.Outcome is { } committed)
            {
                // The work committed before the failure (a status read, a disconnect): the retry the contract
                // prescribes must find that outcome, never redo it.
                await StoreAsync(tenant, key, claim.Started, await FingerprintAsync(prefix, body), committed);
            }
            else if (scope.Later is { } later)
            {
                _ = SettleAsync(tenant, key, claim.Started, await FingerprintAsync(prefix, body), later);
            }
            else if (ex is WriteStillRunningException running)
            {
                _ = SettleAsync(tenant, key, claim.Started, await FingerprintAsync(prefix, body), NoAnswerAsync(running.Landing));
            }
            else if (ex is not CommitOutcomeUnknownException && scope.LandedJob is null)
            {
                // A key whose job exists is never freed: the next retry is answered with that job again.
                await store.ReleaseAsync(tenant, key, claim.Started, CancellationToken.None);
            }
            throw;
        }
        var inner = result;
        while (inner is INestedHttpResult nested)
        {
            inner = nested.Result;
        }
        if (inner is IStatusCodeHttpResult { StatusCode: >= 200 and < 300 } status && inner is IValueHttpResult { Value: { } value })
        {
            if (scope.LandedJob is not null)
            {
                // The job is the earlier request's: this answer stands for the one that request never gave.
                http.Response.Headers[ReplayedHeader] = "true";
            }
            var location = inner switch
            {
                JsonCreated<CreatedJobResponse> c => c.Location,
                JsonCreated<UploadResponse> c => c.Location,
                _ => null,
            };
            await StoreAsync(tenant, key, claim.Started, await FingerprintAsync(prefix, body), new CommittedAnswer(status.StatusCode!.Value, location, value));
        }
        else if (scope.Outcome is { } committed)
        {
            await StoreAsync(tenant, key, claim.Started, await FingerprintAsync(prefix, body), committed);
        }
        else if (scope.LandedJob is null)
        {
            await store.ReleaseAsync(tenant, key, claim.Started, CancellationToken.None);
        }
        return result;
    }

    private static async Task<CommittedAnswer?> NoAnswerAsync(Task landing)
    {
        // Landed, but the handler gave no answer to keep: the key stays taken (a retry gets 409) until the takeover.
        await landing;
        throw new CommitOutcomeUnknownException("the write landed with no answer to replay", new InvalidOperationException());
    }

    /// <summary>Waits, after the request has been answered, for a write that was still running, and settles its key.</summary>
    private async Task SettleAsync(long tenant, string key, DateTime started, byte[] fingerprint, Task<CommittedAnswer?> later)
    {
        CommittedAnswer? answer;
        try
        {
            answer = await later;
        }
        catch (CommitOutcomeUnknownException)
        {
            return; // it may have landed: the key stays taken until the stale takeover
        }
#pragma warning disable CA1031 // the write's error was the caller's to see; here it only says that nothing landed
        catch (Exception)
#pragma warning restore CA1031
        {
            answer = null;
        }
        if (answer is null)
        {
            await KeepTryingAsync(() => store.ReleaseAsync(tenant, key, started, CancellationToken.None), key);
            return;
        }
        await StoreAsync(tenant, key, started, fingerprint, answer);
    }

    /// <summary>
    /// Stores an answer whatever the client does meanwhile: the work it describes has already committed. If the database
    /// refuses it now, it is tried again in the background: a key left running would be taken over after
    /// <see cref="IdempotencyStore.StaleAfter"/>, and the retry would then do the work a second time.
    /// </summary>
    private async Task StoreAsync(long tenant, string key, DateTime started, byte[] fingerprint, CommittedAnswer answer)
    {
        var bytes = JsonSerializer.SerializeToUtf8Bytes(answer.Body, json.Value.SerializerOptions.GetTypeInfo(answer.Body.GetType()));
        var stored = new StoredResponse(answer.StatusCode, answer.Location, bytes);
        Task Complete() => store.CompleteAsync(tenant, key, started, fingerprint, stored, CancellationToken.None);
        try
        {
            await Complete();
        }
        catch (Exception ex) when (ex is MySqlException or IOException or TimeoutException)
        {
            _ = KeepTryingAsync(Complete, key);
        }
    }

    private async Task KeepTryingAsync(Func<Task> write, string key)
    {
        var until = DateTime.UtcNow + IdempotencyStore.StaleAfter - TimeSpan.FromMinutes(1);
        for (var pause = TimeSpan.FromMilliseconds(200); ; pause = TimeSpan.FromTicks(Math.Min(pause.Ticks * 2, TimeSpan.FromSeconds(10).Ticks)))
        {
            await Task.Delay(pause);
            try
            {
                await write();
                return;
            }
            catch (Exception ex) when ((ex is MySqlException or IOException or TimeoutException) && DateTime.UtcNow < until)
            {
            }
#pragma warning disable CA1031 // a background task: nobody awaits it, so its failure is logged here
            catch (Exception ex)
#pragma warning restore CA1031
            {
                LogKeyNotSettled(logger, ex, key);
                return;
            }
        }
    }

    /// <summary>The request's fingerprint, once the body has been read to its end.</summary>
    private static async Task<byte[]> FingerprintAsync(byte[] prefix, MeteredStream body)
    {
        try
        {
            // Handlers read the whole body before they commit, so this normally reads nothing; a client that went away
            // cannot change a fingerprint that is already complete.
            await body.CopyToAsync(Stream.Null, CancellationToken.None);
        }
        catch (Exception ex) when (ex is IOException or OperationCanceledException or BadHttpRequestException)
        {
        }
        return Fingerprint(prefix, body.Hash());
    }

    private static byte[] Fingerprint(byte[] prefix, byte[] bodyHash)
    {
        using var h = IncrementalHash.CreateHash(HashAlgorithmName.SHA256);
        h.AppendData(prefix);
        h.AppendData(bodyHash);
        return h.GetHashAndReset();
    }

    /// <summary>Per request: what the handler committed, or the answer still to come, if it got that far.</summary>
    private sealed class IdempotencyScope(IdempotencyRun run, long? landedJob, (long First, int Count)? landedDocuments) : IIdempotencyFeature
    {
        public IdempotencyRun Run => run;

        public long? LandedJob => landedJob;

        public (long First, int Count)? LandedDocuments => landedDocuments;

        public CommittedAnswer? Outcome { get; private set; }

        public Task<CommittedAnswer?>? Later { get; private set; }

        public void Committed(int statusCode, string location, object body) => Outcome = new CommittedAnswer(statusCode, location, body);

        public void Landing(Task<CommittedAnswer?> answer) => Later = answer;
    }

    [LoggerMessage(EventId = 1002, Level = LogLevel.Error,
        Message = "The Idempotency-Key {Key} could not be settled after its write; it stays taken until the stale takeover")]
    private static partial void LogKeyNotSettled(ILogger logger, Exception exception, string key);

    /// <summary>The first answer, exactly as it was sent.</summary>
    private sealed class ReplayResult(StoredResponse stored) : IResult
    {
        public async Task ExecuteAsync(HttpContext httpContext)
        {
            var response = httpContext.Response;
            response.StatusCode = stored.StatusCode;
            if (stored.Location is not null)
            {
                response.Headers.Location = stored.Location;
            }
            response.Headers[ReplayedHeader] = "true";
            response.ContentType = "application/json; charset=utf-8";
            response.ContentLength = stored.Body.Length;
            await response.Body.WriteAsync(stored.Body, httpContext.RequestAborted);
        }
    }
}
