using Microsoft.AspNetCore.Http.HttpResults;
using MySqlConnector;
using Prometheus;
using Queue.Api.Infrastructure;
using Queue.Core.Data;

namespace Queue.Api;

/// <summary>Liveness, readiness and Prometheus metrics. None of these needs a key.</summary>
public static class OpsApi
{
    public static IEndpointRouteBuilder MapOpsApi(this IEndpointRouteBuilder app)
    {
        var ops = app.MapGroup("").AllowAnonymous().WithTags("Operations");
        ops.MapGet("/healthz", () => TypedResults.Ok(new HealthStatus("ok")));
        ops.MapGet("/readyz", ReadyAsync);
        // queue_items is refreshed from this app's own database before the registry is written out.
        ops.MapMetrics("/metrics").Add(endpoint =>
        {
            var serve = endpoint.RequestDelegate!;
            endpoint.RequestDelegate = async http =>
            {
                await http.RequestServices.GetRequiredService<Work.WorkMetrics>().RefreshAsync(http.RequestAborted);
                await serve(http);
            };
        });
        ApiMetrics.TrackRewrites(app.ServiceProvider);
        ApiMetrics.TrackReplica(app.ServiceProvider);
        return app;
    }

    private static async Task<Results<Ok<HealthStatus>, ProblemHttpResult>> ReadyAsync(MySqlDataSource db, CancellationToken ct)
    {
        try
        {
            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(ct);
            timeout.CancelAfter(TimeSpan.FromSeconds(2));
            if (await Migrations.AreAppliedAsync(db, timeout.Token))
            {
                return TypedResults.Ok(new HealthStatus("ready"));
            }
            return TypedResults.Problem(statusCode: 503, title: "Service Unavailable", detail: "migrations are not all applied");
        }
        catch (Exception ex) when (ex is MySqlException or OperationCanceledException)
        {
            return TypedResults.Problem(statusCode: 503, title: "Service Unavailable", detail: "the database is unreachable");
        }
    }
}

public sealed record HealthStatus(string Status);
