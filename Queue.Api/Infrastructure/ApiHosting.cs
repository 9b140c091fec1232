using System.Text.Json;
using System.Text.Json.Serialization;
using System.Threading.RateLimiting;
using Microsoft.AspNetCore.Http.Timeouts;
using Microsoft.AspNetCore.RateLimiting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.Options;
using Queue.Core.Composition;
using Queue.Core.Hosting;

namespace Queue.Api.Infrastructure;

public static class ApiHosting
{
    public const string GlobalLimiter = "global";

    /// <summary>POST /next only: a long-poll holds its permit while it waits.</summary>
    public const string PollLimiter = "polls";

    /// <summary>POST /next: the default request timeout on top of the longest long-poll wait (30 s).</summary>
    public const string LongPollTimeout = "long-poll";

    /// <summary>A request that waited on the database past its timeout: 503 with Retry-After, as when the database is busy.</summary>
    private static RequestTimeoutPolicy TimeoutPolicy(TimeSpan timeout) => new()
    {
        Timeout = timeout,
        TimeoutStatusCode = 503,
        WriteTimeoutResponse = async http =>
        {
            http.Response.Headers.RetryAfter = "1";
            await http.RequestServices.GetRequiredService<IProblemDetailsService>().WriteAsync(new ProblemDetailsContext
            {
                HttpContext = http,
                ProblemDetails =
                {
                    Status = 503,
                    Title = "Service Unavailable",
                    Detail = $"the database did not answer within {timeout.TotalSeconds:0} s; retry later",
                },
            });
        },
    };

    public static WebApplicationBuilder AddQueueApi(this WebApplicationBuilder builder)
    {
        var services = builder.Services;
        services.AddQueueCore();
        services.AddSingleton<Queue.Core.Cluster.ClusterNodes>();
        services.AddHostedService(sp => sp.GetRequiredService<Queue.Core.Cluster.ClusterNodes>());
        services.AddCheckedOptions<ApiLimitsOptions, ApiLimitsOptionsRules>();
        services.AddOptions<KestrelServerOptions>().Configure<IOptions<ApiLimitsOptions>>((k, limits) =>
        {
            k.AddServerHeader = false;
            k.Limits.MaxRequestBodySize = limits.Value.MaxRequestBytes;
            k.Limits.MaxRequestHeadersTotalSize = 32 * 1024;
            k.Limits.MaxRequestLineSize = 8 * 1024;
            k.Limits.KeepAliveTimeout = TimeSpan.FromSeconds(120);
            // A slow-loris upload must not pin a connection forever.
            k.Limits.MinRequestBodyDataRate = new MinDataRate(bytesPerSecond: 1024, gracePeriod: TimeSpan.FromSeconds(10));
        });
        services.ConfigureHttpJsonOptions(o =>
        {
            o.SerializerOptions.PropertyNamingPolicy = JsonNamingPolicy.CamelCase;
            o.SerializerOptions.UnmappedMemberHandling = JsonUnmappedMemberHandling.Disallow;
            o.SerializerOptions.DefaultIgnoreCondition = JsonIgnoreCondition.Never;
            // docs/CONTRACT.md: bodies are strict. The web defaults would accept "max": "5" and "MAX": 5.
            o.SerializerOptions.NumberHandling = JsonNumberHandling.Strict;
            o.SerializerOptions.PropertyNameCaseInsensitive = false;
            o.SerializerOptions.TypeInfoResolverChain.Insert(0, OpsJsonContext.Default);
        });
        services.AddApiProblems();
        services.AddApiKeyAuth();
        services.AddRateLimiter(o =>
        {
            o.RejectionStatusCode = 503;
            o.OnRejected = async (ctx, ct) =>
            {
                var status = ctx.HttpContext.Response.StatusCode;
                if (ctx.Lease.TryGetMetadata(MetadataName.RetryAfter, out var retry))
                {
                    ctx.HttpContext.Response.Headers.RetryAfter = ((int)Math.Ceiling(retry.TotalSeconds)).ToString(System.Globalization.CultureInfo.InvariantCulture);
                }
                else
                {
                    ctx.HttpContext.Response.Headers.RetryAfter = "1";
                }
                var problems = ctx.HttpContext.RequestServices.GetRequiredService<IProblemDetailsService>();
                await problems.WriteAsync(new ProblemDetailsContext
                {
                    HttpContext = ctx.HttpContext,
                    ProblemDetails =
                    {
                        Status = status,
                        Title = status == 429 ? "Too Many Requests" : "Service Unavailable",
                        Detail = status == 429 ? "the tenant's rate limit was reached; retry after the Retry-After delay" : "the service is at capacity; retry shortly",
                    },
                });
            };
        });
        // Bound from the options, not from the builder's configuration, so that settings a host adds late (tests) apply.
        services.AddOptions<RateLimiterOptions>().Configure<Microsoft.Extensions.Options.IOptions<ApiLimitsOptions>>((o, options) =>
        {
            // Bounded concurrency: beyond this, answer 503 at once rather than queue.
            o.AddConcurrencyLimiter(GlobalLimiter, c =>
            {
                c.PermitLimit = options.Value.MaxConcurrentRequests;
                c.QueueLimit = 0;
            });
            o.AddConcurrencyLimiter(PollLimiter, c =>
            {
                c.PermitLimit = options.Value.MaxConcurrentPolls;
                c.QueueLimit = 0;
            });
        });
        services.AddRequestTimeouts();
        services.AddOptions<RequestTimeoutOptions>().Configure<IOptions<ApiLimitsOptions>>((o, limits) =>
        {
            var timeout = TimeSpan.FromSeconds(limits.Value.RequestTimeoutSeconds);
            o.DefaultPolicy = TimeoutPolicy(timeout);
            o.AddPolicy(LongPollTimeout, TimeoutPolicy(timeout + TimeSpan.FromSeconds(30)));
        });
        services.AddOpenApi();
        ApiMetrics.Initialise();
        ApiMeters.Register();
        Work.WorkMetrics.Mirror();
        Fairness.FairnessExporter.Mirror();
        return builder;
    }
}

[JsonSourceGenerationOptions(JsonSerializerDefaults.Web)]
[JsonSerializable(typeof(HealthStatus))]
internal sealed partial class OpsJsonContext : JsonSerializerContext;
