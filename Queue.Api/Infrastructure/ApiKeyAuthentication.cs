using System.Globalization;
using System.Security.Claims;
using System.Text.Encodings.Web;
using Microsoft.AspNetCore.Authentication;
using Microsoft.Extensions.Options;
using Queue.Core.Security;

namespace Queue.Api.Infrastructure;

/// <summary>Bearer API keys: a key resolves to a role and, for customers, a tenant.</summary>
public sealed class ApiKeyAuthenticationHandler(
    IOptionsMonitor<AuthenticationSchemeOptions> options,
    ILoggerFactory logger,
    UrlEncoder encoder,
    ApiKeyService keys,
    IProblemDetailsService problems) : AuthenticationHandler<AuthenticationSchemeOptions>(options, logger, encoder)
{
    public const string SchemeName = "ApiKey";
    public const string RoleClaim = "queue:role";
    public const string TenantClaim = "queue:tenant";
    public const string TenantNameClaim = "queue:tenant-name";
    public const string KeyClaim = "queue:key";
    public const string RateLimitClaim = "queue:rate-limit";
    public const string RateBurstClaim = "queue:rate-burst";

    protected override async Task<AuthenticateResult> HandleAuthenticateAsync()
    {
        string? header = Request.Headers.Authorization;
        if (string.IsNullOrEmpty(header))
        {
            return AuthenticateResult.NoResult();
        }
        if (!header.StartsWith("Bearer ", StringComparison.OrdinalIgnoreCase))
        {
            return AuthenticateResult.Fail("the Authorization header must be 'Bearer <key>'");
        }
        var principal = await keys.ResolveAsync(header["Bearer ".Length..].Trim(), Context.RequestAborted);
        if (principal is null)
        {
            return AuthenticateResult.Fail("unknown or revoked key");
        }
        var claims = new List<Claim>
        {
            new(RoleClaim, principal.Role == KeyRole.Worker ? "worker" : "customer"),
            new(KeyClaim, principal.KeyId.ToString(CultureInfo.InvariantCulture)),
        };
        if (principal.TenantId is { } tenant)
        {
            claims.Add(new Claim(TenantClaim, tenant.ToString(CultureInfo.InvariantCulture)));
            claims.Add(new Claim(TenantNameClaim, principal.TenantName ?? ""));
            claims.Add(new Claim(RateLimitClaim, principal.RateLimit.ToString(CultureInfo.InvariantCulture)));
            claims.Add(new Claim(RateBurstClaim, principal.RateBurst.ToString(CultureInfo.InvariantCulture)));
        }
        var identity = new ClaimsIdentity(claims, SchemeName, null, RoleClaim);
        return AuthenticateResult.Success(new AuthenticationTicket(new ClaimsPrincipal(identity), SchemeName));
    }

    protected override async Task HandleChallengeAsync(AuthenticationProperties properties)
    {
        Response.StatusCode = StatusCodes.Status401Unauthorized;
        Response.Headers.WWWAuthenticate = "Bearer";
        var result = await HandleAuthenticateOnceSafeAsync();
        await problems.WriteAsync(new ProblemDetailsContext
        {
            HttpContext = Context,
            ProblemDetails =
            {
                Status = 401,
                Title = "Unauthorized",
                Detail = result.Failure?.Message ?? "send 'Authorization: Bearer <key>'",
            },
        });
    }

    protected override async Task HandleForbiddenAsync(AuthenticationProperties properties)
    {
        Response.StatusCode = StatusCodes.Status403Forbidden;
        await problems.WriteAsync(new ProblemDetailsContext
        {
            HttpContext = Context,
            ProblemDetails = { Status = 403, Title = "Forbidden", Detail = "this key's role may not use this endpoint" },
        });
    }
}

public static class Roles
{
    public const string Customer = "customer";
    public const string Worker = "worker";

    public static IServiceCollection AddApiKeyAuth(this IServiceCollection services)
    {
        services.AddAuthentication(ApiKeyAuthenticationHandler.SchemeName)
            .AddScheme<AuthenticationSchemeOptions, ApiKeyAuthenticationHandler>(ApiKeyAuthenticationHandler.SchemeName, null);
        services.AddAuthorizationBuilder()
            .AddPolicy(Customer, p => p.RequireClaim(ApiKeyAuthenticationHandler.RoleClaim, Customer))
            .AddPolicy(Worker, p => p.RequireClaim(ApiKeyAuthenticationHandler.RoleClaim, Worker));
        return services;
    }

    /// <summary>The calling customer's tenant id. Only valid behind the customer policy.</summary>
    public static long TenantId(this ClaimsPrincipal user) =>
        long.Parse(user.FindFirst(ApiKeyAuthenticationHandler.TenantClaim)!.Value, CultureInfo.InvariantCulture);

    public static string TenantName(this ClaimsPrincipal user) => user.FindFirst(ApiKeyAuthenticationHandler.TenantNameClaim)!.Value;
}
