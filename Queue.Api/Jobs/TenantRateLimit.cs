using System.Globalization;
using System.Threading.RateLimiting;
using Microsoft.AspNetCore.RateLimiting;
using Microsoft.Extensions.Options;
using Queue.Api.Infrastructure;
using Queue.Core.Cluster;

namespace Queue.Api.Jobs;

/// <summary>
/// Per-tenant token bucket on customer routes: <c>rate_limit</c> tokens per second, bucket size <c>rate_burst</c>, from the
/// tenant row (carried on the key's cached principal, so a change applies within Auth:KeyCacheSeconds). 0 means no limit.
/// The partition key includes the limits, so a changed setting starts a fresh bucket.
/// With several Api processes behind a balancer, each enforces its share: the rate and the burst divided by the live
/// Api processes (<see cref="ClusterNodes"/>), which holds the tenant to its rate across the cluster while the balancer
/// spreads requests evenly, at no cost per request (docs/DESIGN.md "Scaling out").
/// </summary>
public sealed class TenantRateLimitPolicy(ClusterNodes nodes) : IRateLimiterPolicy<string>
{
    public const string Name = "tenant";

    public Func<OnRejectedContext, CancellationToken, ValueTask>? OnRejected => async (ctx, ct) =>
    {
        ctx.HttpContext.Response.StatusCode = StatusCodes.Status429TooManyRequests;
        var options = ctx.HttpContext.RequestServices.GetRequiredService<IOptions<RateLimiterOptions>>().Value;
        if (options.OnRejected is { } write)
        {
            await write(ctx, ct);
        }
    };

    public RateLimitPartition<string> GetPartition(HttpContext httpContext)
    {
        var user = httpContext.User;
        var tenant = user.FindFirst(ApiKeyAuthenticationHandler.TenantClaim)?.Value;
        if (tenant is null)
        {
            return RateLimitPartition.GetNoLimiter("anonymous");
        }
        var limit = Claim(user, ApiKeyAuthenticationHandler.RateLimitClaim);
        var burst = Claim(user, ApiKeyAuthenticationHandler.RateBurstClaim);
        if (limit <= 0)
        {
            return RateLimitPartition.GetNoLimiter("unlimited:" + tenant);
        }
        var share = nodes.LiveApiNodes;
        return RateLimitPartition.GetTokenBucketLimiter(string.Create(CultureInfo.InvariantCulture, $"{tenant}:{limit}:{burst}:{share}"),
            _ => Bucket((double)limit / share, (int)Math.Ceiling((double)burst / share)));
    }

    /// <summary>
    /// Refills about ten times a second (or once per token below 10/s) so a limit is smooth, not a burst per second; the
    /// period is chosen so that whole tokens per period give exactly <paramref name="rate"/> per second.
    /// </summary>
    public static TokenBucketRateLimiterOptions Bucket(double rate, int burst)
    {
        var tokens = Math.Max(1, (int)Math.Floor(rate / 10));
        var period = TimeSpan.FromSeconds(tokens / rate);
        return new TokenBucketRateLimiterOptions
        {
            TokenLimit = Math.Max(Math.Max(burst, tokens), 1),
            TokensPerPeriod = tokens,
            ReplenishmentPeriod = period,
            QueueLimit = 0,
            AutoReplenishment = true,
        };
    }

    private static int Claim(System.Security.Claims.ClaimsPrincipal user, string type) =>
        int.TryParse(user.FindFirst(type)?.Value, NumberStyles.Integer, CultureInfo.InvariantCulture, out var v) ? v : 0;
}
