using Microsoft.AspNetCore.Authentication.Cookies;
using Queue.Admin;
using Queue.Core;

if (args.Length > 0 && Cli.Commands.Contains(args[0]))
{
    return await Cli.RunAsync(args);
}

var builder = WebApplication.CreateBuilder(args);
builder.Services.AddQueueCore();
builder.Services.AddAuthentication(CookieAuthenticationDefaults.AuthenticationScheme)
    .AddCookie(o =>
    {
        o.LoginPath = "/Account/Login";
        o.LogoutPath = "/Account/Logout";
        o.Cookie.Name = "queue-admin";
        o.Cookie.HttpOnly = true;
        o.Cookie.SameSite = SameSiteMode.Strict;
        o.SlidingExpiration = true;
        o.ExpireTimeSpan = TimeSpan.FromHours(8);
    });
builder.Services.AddAuthorizationBuilder()
    .AddPolicy(AdminPolicies.Technician, p => p.RequireAuthenticatedUser().RequireClaim(AdminPolicies.TechnicianClaim))
    // Every page needs a signed-in technician unless it opts out explicitly (only the login page does).
    .SetFallbackPolicy(new Microsoft.AspNetCore.Authorization.AuthorizationPolicyBuilder()
        .RequireAuthenticatedUser().RequireClaim(AdminPolicies.TechnicianClaim).Build());
builder.Services.AddRazorPages(o => o.Conventions.AuthorizeFolder("/", AdminPolicies.Technician).AllowAnonymousToPage("/Account/Login"));

var app = builder.Build();
app.UseExceptionHandler("/Error");
app.UseStatusCodePages();
app.UseStaticFiles();
app.UseRouting();
app.UseAuthentication();
app.UseAuthorization();
app.MapGet("/healthz", () => TypedResults.Ok("ok")).AllowAnonymous();
app.MapRazorPages();
await app.RunAsync();
return 0;
