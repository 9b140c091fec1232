using System.Security.Claims;
using System.Text.Json;
using System.Text.Json.Serialization;
using Microsoft.AspNetCore.Http.HttpResults;
using Queue.Api.Infrastructure;
using Queue.Api.Jobs;
using Queue.Core.Fairness;

namespace Queue.Api.Fairness;

/// <summary>GET /jobs/{id}/explain: why a job is where it is (customer, own jobs only), and the fairness metrics' exporter.</summary>
public static class ExplainApi
{
    public static IServiceCollection AddFairnessApi(this IServiceCollection services)
    {
        services.ConfigureHttpJsonOptions(o => o.SerializerOptions.TypeInfoResolverChain.Insert(0, FairnessJsonContext.Default));
        services.AddHostedService<FairnessExporter>();
        FairnessExporter.Initialise();
        return services;
    }

    public static IEndpointRouteBuilder MapFairnessApi(this IEndpointRouteBuilder app)
    {
        // Rate-limited like every customer route: an explain costs a bounded walk of the ordering, but it costs one.
        var jobs = app.MapGroup("/jobs").RequireAuthorization(Roles.Customer).RequireRateLimiting(TenantRateLimitPolicy.Name)
            .WithTags("Jobs").ProducesProblem(401).ProducesProblem(403).ProducesProblem(429);
        jobs.MapGet("/{id:long}/explain", ExplainAsync).ProducesProblem(404)
            .WithSummary("Why the job is where it is: position, policy, mode and value, override, jobs ahead by reason, next rewrite, ETA range")
            .WithName("ExplainJob");
        return app;
    }

    private static async Task<Results<Ok<JobExplanation>, ProblemHttpResult>> ExplainAsync(long id, ClaimsPrincipal user, ExplainService explain, CancellationToken ct) =>
        await explain.ExplainAsync(user.TenantId(), id, ct) is { } e ? TypedResults.Ok(e) : Problems.NotFound($"job {id}");
}

[JsonSourceGenerationOptions(JsonSerializerDefaults.Web)]
[JsonSerializable(typeof(JobExplanation))]
internal sealed partial class FairnessJsonContext : JsonSerializerContext;
