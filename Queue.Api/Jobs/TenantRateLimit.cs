using System.Globalization;
using System.Threading.RateLimiting;
using Microsoft.AspNetCore.RateLimiting;
using Microsoft.Extensions.Options;
using Queue.Api.Infrastructure;

namespace Queue.Api.Jobs;

/// <summary>
/// Per-tenant token bucket on customer routes: <c>rate_limit</c> tokens per second, bucket size <c>rate_burst</c>, from the
/// tenant row (carried on the key's cached principal, so a change applies within Auth:KeyCacheSeconds). 0 means no limit.
/// The partition key includes the limits, so a changed setting starts a fresh bucket.
/// </summary>
public sealed class TenantRateLimitPolicy : IRateLimiterPolicy<string>
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
        return RateLimitPartition.GetTokenBucketLimiter(string.Create(CultureInfo.InvariantCulture, $"{tenant}:{limit}:{burst}"), _ => Bucket(limit, burst));
    }

    /// <summary>Refills ten times a second (or once per token below 10/s) so a limit is smooth, not a burst per second.</summary>
    public static TokenBucketRateLimiterOptions Bucket(int limit, int burst)
    {
        var (tokens, period) = limit >= 10
            ? ((int)Math.Ceiling(limit / 10.0), TimeSpan.FromMilliseconds(100))
            : (1, TimeSpan.FromSeconds(1.0 / limit));
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
