using System.Text.Json;
using System.Text.Json.Serialization;
using Microsoft.AspNetCore.Http.HttpResults;
using Microsoft.AspNetCore.Mvc;
using Queue.Api.Infrastructure;
using Queue.Core.Claims;
using Queue.Core.Cluster;
using Queue.Core.Data;
using Queue.Core.Work;

namespace Queue.Api.Work;

/// <summary>The worker endpoints of docs/CONTRACT.md: POST /next, the leased document, complete, fail and extend.</summary>
public static class WorkerApi
{
    public const string LeaseTokenHeader = "Lease-Token";

    public static IServiceCollection AddWorkerApi(this IServiceCollection services)
    {
        services.AddWork();
        services.AddSingleton<WorkMetrics>();
        services.AddSingleton<NextExchange>();
        services.ConfigureHttpJsonOptions(o => o.SerializerOptions.TypeInfoResolverChain.Insert(0, WorkJsonContext.Default));
        return services;
    }

    public static IEndpointRouteBuilder MapWorkerApi(this IEndpointRouteBuilder app)
    {
        var sp = app.ServiceProvider;
        sp.GetRequiredService<ClaimCounters>().LeaseExpired += n => ApiMetrics.LeasesExpired.Inc(n);

        var work = app.MapGroup("").RequireAuthorization(Roles.Worker).WithTags("Workers");
        // Long-polls wait holding a permit; finishing work must never queue behind them, or leases expire.
        work.MapPost("/next", NextAsync).RequireRateLimiting(ApiHosting.PollLimiter).Accepts<NextRequest>("application/json")
            .ProducesValidationProblem().ProducesProblem(503).WithRequestTimeout(ApiHosting.LongPollTimeout);
        work = work.MapGroup("").RequireRateLimiting(ApiHosting.GlobalLimiter);
        work.MapGet("/items/{id:long}/document", DocumentAsync).Produces(200, contentType: "application/octet-stream")
            .ProducesProblem(404).ProducesProblem(409).DisableRequestTimeout();
        // With "next" (CONTRACT v1.3) they answer the next items too: one exchange instead of a finish and a /next.
        work.MapPost("/items/{id:long}/complete", CompleteAsync).ProducesValidationProblem().ProducesProblem(404).ProducesProblem(409).ProducesProblem(503);
        work.MapPost("/items/{id:long}/fail", FailAsync).ProducesValidationProblem().ProducesProblem(404).ProducesProblem(409).ProducesProblem(503);
        work.MapPost("/items/{id:long}/extend", ExtendAsync).ProducesValidationProblem().ProducesProblem(404).ProducesProblem(409).ProducesProblem(503);
        return app;
    }

    private static async Task<Results<JsonOk<NextResponse>, NoContent, ValidationProblem, ProblemHttpResult>> NextAsync(
        [FromBody(EmptyBodyBehavior = Microsoft.AspNetCore.Mvc.ModelBinding.EmptyBodyBehavior.Allow)] NextRequest? body,
        NextService next, HttpContext http, CancellationToken ct)
    {
        body ??= new NextRequest(null, null, null, null, null);
        var errors = NextExchange.Errors(body);
        if (errors.Count > 0)
        {
            return Problems.Validation(errors);
        }
        try
        {
            var items = await next.NextAsync(NextExchange.Claim(body), TimeSpan.FromSeconds(body.Wait ?? 0), NextExchange.RequestId(body, http), ct);
            if (items.Count == 0)
            {
                return TypedResults.NoContent();
            }
            ApiMetrics.Claims.Inc(items.Count);
            return new JsonOk<NextResponse>(new NextResponse(items.Select(ToDto).ToList()));
        }
        catch (ServiceBusyException ex)
        {
            return Busy(http, ex);
        }
    }

    private static async Task<Results<PushStreamHttpResult, ProblemHttpResult>> DocumentAsync(long id, HttpContext http, LeaseService leases, CancellationToken ct)
    {
        if (!TryToken(http.Request.Headers[LeaseTokenHeader].ToString(), out var token))
        {
            return Problems.Conflict($"send the '{LeaseTokenHeader}' header of a live lease on this item");
        }
        var (outcome, doc) = await leases.DocumentAsync(new LeaseRef(id, token), ct);
        if (outcome != FinishOutcome.Done || doc is null)
        {
            return Refused(outcome);
        }
        http.Response.ContentLength = doc.Size;
        return TypedResults.Stream(stream => leases.CopyDocumentAsync(doc.Id, stream, ct), doc.ContentType);
    }

    private static async Task<Results<NoContent, JsonOk<NextResponse>, ValidationProblem, ProblemHttpResult>> CompleteAsync(long id, CompleteRequest? body,
        CompletionBatcher completions, NextExchange exchange, HttpContext http, CancellationToken ct)
    {
        var errors = WorkValidation.LeaseToken(body?.LeaseToken);
        NextExchange.Validate(body?.Next, errors);
        if (errors.Count > 0)
        {
            return Problems.Validation(errors);
        }
        if (!TryToken(body!.LeaseToken, out var token))
        {
            return Problems.Conflict("the lease token is not a live lease on this item");
        }
        try
        {
            var outcome = await completions.CompleteAsync(new LeaseRef(id, token), ct);
            if (outcome != FinishOutcome.Done)
            {
                return Refused(outcome);
            }
            ApiMetrics.Completions.Inc();
        }
        catch (ServiceBusyException ex)
        {
            return Busy(http, ex);
        }
        if (body.Next is null)
        {
            return TypedResults.NoContent();
        }
        return await exchange.NextAsync(body.Next, http, ct);
    }

    private static async Task<Results<NoContent, JsonOk<NextResponse>, ValidationProblem, ProblemHttpResult>> FailAsync(long id, FailRequest? body,
        LeaseService leases, NextExchange exchange, HttpContext http, CancellationToken ct)
    {
        var errors = WorkValidation.Fail(body?.LeaseToken, body?.Error);
        NextExchange.Validate(body?.Next, errors);
        if (errors.Count > 0)
        {
            return Problems.Validation(errors);
        }
        if (!TryToken(body!.LeaseToken, out var token))
        {
            return Problems.Conflict("the lease token is not a live lease on this item");
        }
        var (outcome, _, _) = await leases.FailAsync(new LeaseRef(id, token), body.Error ?? "", body.Retry ?? true, ct);
        if (outcome != FinishOutcome.Done)
        {
            return Refused(outcome);
        }
        if (body.Next is null)
        {
            return TypedResults.NoContent();
        }
        return await exchange.NextAsync(body.Next, http, ct);
    }

    private static async Task<Results<Ok<ExtendResponse>, ValidationProblem, ProblemHttpResult>> ExtendAsync(long id, ExtendRequest? body, LeaseService leases,
        DatabaseClock databaseClock, CancellationToken ct)
    {
        var errors = WorkValidation.Extend(body?.LeaseToken, body?.Lease);
        if (errors.Count > 0)
        {
            return Problems.Validation(errors);
        }
        databaseClock.ThrowIfNotSynced();
        if (!TryToken(body!.LeaseToken, out var token))
        {
            return Problems.Conflict("the lease token is not a live lease on this item");
        }
        var (outcome, expires) = await leases.ExtendAsync(new LeaseRef(id, token), body.Lease ?? 300, null, ct);
        return outcome == FinishOutcome.Done ? TypedResults.Ok(new ExtendResponse(expires)) : Refused(outcome);
    }

    internal static NextItem ToDto(TakenItem t) => new(t.Id, Convert.ToHexStringLower(t.Token), t.Until, t.JobId, t.TenantName,
        t.DocumentId, t.DocumentName, t.ContentType, t.Task, t.Attempt);

    /// <summary>Lease tokens are 16 random bytes in lowercase hex; anything else cannot be a live lease.</summary>
    private static bool TryToken(string? s, out byte[] token)
    {
        token = [];
        if (s is not { Length: 32 })
        {
            return false;
        }
        try
        {
            token = Convert.FromHexString(s);
            return true;
        }
        catch (FormatException)
        {
            return false;
        }
    }

    private static ProblemHttpResult Refused(FinishOutcome outcome) => outcome == FinishOutcome.NotFound
        ? Problems.NotFound("the item")
        : Problems.Conflict("the lease token is stale or belongs to another lease: it expired, or the item was handed to another worker, or it is finished");

    internal static ProblemHttpResult Busy(HttpContext http, ServiceBusyException ex)
    {
        http.Response.Headers.RetryAfter = "1";
        return TypedResults.Problem(statusCode: 503, title: "Service Unavailable", detail: ex.Message + "; retry shortly");
    }
}

public sealed record NextRequest(string? Worker, List<string>? Tasks, int? Max, int? Wait, int? Lease, string? RequestId = null);

public sealed record NextItem(long Id, string LeaseToken, DateTime LeaseExpiresAt, long JobId, string Tenant, long DocumentId,
    string DocumentName, string ContentType, string Task, int Attempt);

public sealed record NextResponse(IReadOnlyList<NextItem> Items);

/// <param name="Next">CONTRACT v1.3: a /next body; the answer is then 200 with the next items (<see cref="NextExchange"/>).</param>
public sealed record CompleteRequest(string? LeaseToken, NextRequest? Next = null);

/// <param name="Next">CONTRACT v1.3: a /next body; the answer is then 200 with the next items (<see cref="NextExchange"/>).</param>
public sealed record FailRequest(string? LeaseToken, string? Error, bool? Retry, NextRequest? Next = null);

public sealed record ExtendRequest(string? LeaseToken, int? Lease);

public sealed record ExtendResponse(DateTime LeaseExpiresAt);

[JsonSourceGenerationOptions(JsonSerializerDefaults.Web)]
[JsonSerializable(typeof(NextRequest))]
[JsonSerializable(typeof(NextResponse))]
[JsonSerializable(typeof(CompleteRequest))]
[JsonSerializable(typeof(FailRequest))]
[JsonSerializable(typeof(ExtendRequest))]
[JsonSerializable(typeof(ExtendResponse))]
internal sealed partial class WorkJsonContext : JsonSerializerContext;
