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
/// with another method, path, Content-Type or body gets 422. Errors free the key. The fingerprint is a SHA-256 of the
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
        http.Request.Body = body;
        object? result;
        try
        {
            result = await next(context);
        }
        catch
        {
            await store.ReleaseAsync(tenant, key, claim.Started, CancellationToken.None);
            throw;
        }
        var inner = result;
        while (inner is INestedHttpResult nested)
        {
            inner = nested.Result;
        }
        if (inner is IStatusCodeHttpResult { StatusCode: >= 200 and < 300 } status && inner is IValueHttpResult { Value: { } value })
        {
            // Whatever the handler left unread still belongs to the fingerprint.
            await body.CopyToAsync(Stream.Null, ct);
            var bytes = JsonSerializer.SerializeToUtf8Bytes(value, json.Value.SerializerOptions.GetTypeInfo(value.GetType()));
            var location = inner switch
            {
                Created<CreatedJobResponse> c => c.Location,
                Created<UploadResponse> c => c.Location,
                _ => null,
            };
            await store.CompleteAsync(tenant, key, claim.Started, Fingerprint(prefix, body.Hash()),
                new StoredResponse(status.StatusCode!.Value, location, bytes), CancellationToken.None);
        }
        else
        {
            await store.ReleaseAsync(tenant, key, claim.Started, CancellationToken.None);
        }
        return result;
    }

    private static byte[] Fingerprint(byte[] prefix, byte[] bodyHash)
    {
        using var h = IncrementalHash.CreateHash(HashAlgorithmName.SHA256);
        h.AppendData(prefix);
        h.AppendData(bodyHash);
        return h.GetHashAndReset();
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
