using System.Security.Cryptography;
using System.Text;
using System.Text.Json;
using Microsoft.AspNetCore.Http.HttpResults;
using Microsoft.AspNetCore.Http.Json;
using Microsoft.Extensions.Options;
using Queue.Api.Infrastructure;
using Queue.Core.Jobs;

namespace Queue.Api.Jobs;

/// <summary>
/// The Idempotency-Key header (IETF draft) for any customer POST: a first request claims the key; its 2xx answer is stored
/// and replayed (status, Location, body) to a retry with the same fingerprint; a retry while it runs gets 409; the same key
/// with another method, path, Content-Type or body gets 422. Errors before the handler's commit free the key; once it
/// committed (<see cref="Committed"/>) the key replays that outcome whatever fails afterwards. The fingerprint is a SHA-256 of the
/// body computed as the handler streams it, so the filter never buffers the request.
/// </summary>
public sealed class IdempotencyFilter(IdempotencyStore store, IOptions<JsonOptions> json) : IEndpointFilter
{
    public const string Header = "Idempotency-Key";

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
        var scope = new IdempotencyScope();
        http.Features.Set(scope);
        http.Request.Body = body;
        object? result;
        try
        {
            result = await next(context);
        }
        catch
        {
            if (scope.Outcome is { } committed)
            {
                // The work committed before the failure (a status read, a disconnect): the retry the contract
                // prescribes must find that outcome, never redo it.
                await StoreAsync(tenant, key, claim.Started, prefix, body, committed.StatusCode, committed.Location, committed.Body);
            }
            else
            {
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
            var location = inner switch
            {
                JsonCreated<CreatedJobResponse> c => c.Location,
                JsonCreated<UploadResponse> c => c.Location,
                _ => null,
            };
            await StoreAsync(tenant, key, claim.Started, prefix, body, status.StatusCode!.Value, location, value);
        }
        else if (scope.Outcome is { } committed)
        {
            await StoreAsync(tenant, key, claim.Started, prefix, body, committed.StatusCode, committed.Location, committed.Body);
        }
        else
        {
            await store.ReleaseAsync(tenant, key, claim.Started, CancellationToken.None);
        }
        return result;
    }

    /// <summary>
    /// Called by a handler the moment its work has committed, with the answer a retry must get should anything fail
    /// before the real answer is ready. From here on the key is never freed.
    /// </summary>
    public static void Committed(HttpContext http, int statusCode, string location, object body)
    {
        if (http.Features.Get<IdempotencyScope>() is { } scope)
        {
            scope.Outcome = new CommittedOutcome(statusCode, location, body);
        }
    }

    /// <summary>Stores an answer whatever the client does meanwhile: the work it describes has already committed.</summary>
    private async Task StoreAsync(long tenant, string key, DateTime started, byte[] prefix, MeteredStream body, int statusCode, string? location, object value)
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
        var bytes = JsonSerializer.SerializeToUtf8Bytes(value, json.Value.SerializerOptions.GetTypeInfo(value.GetType()));
        await store.CompleteAsync(tenant, key, started, Fingerprint(prefix, body.Hash()), new StoredResponse(statusCode, location, bytes), CancellationToken.None);
    }

    private static byte[] Fingerprint(byte[] prefix, byte[] bodyHash)
    {
        using var h = IncrementalHash.CreateHash(HashAlgorithmName.SHA256);
        h.AppendData(prefix);
        h.AppendData(bodyHash);
        return h.GetHashAndReset();
    }

    private sealed record CommittedOutcome(int StatusCode, string Location, object Body);

    /// <summary>Per request: what the handler committed, if it got that far.</summary>
    private sealed class IdempotencyScope
    {
        public CommittedOutcome? Outcome { get; set; }
    }

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
            response.Headers["Idempotent-Replayed"] = "true";
            response.ContentType = "application/json; charset=utf-8";
            response.ContentLength = stored.Body.Length;
            await response.Body.WriteAsync(stored.Body, httpContext.RequestAborted);
        }
    }
}
