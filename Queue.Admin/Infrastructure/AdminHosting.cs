using Microsoft.AspNetCore.Antiforgery;
using Microsoft.AspNetCore.Authentication.Cookies;
using Microsoft.AspNetCore.Authorization;
using Microsoft.AspNetCore.DataProtection;
using Microsoft.AspNetCore.DataProtection.KeyManagement;
using Microsoft.Extensions.Options;
using Queue.Core.Composition;
using Queue.Core.Admin;
using Queue.Core.Hosting;

namespace Queue.Admin.Infrastructure;

public static class AdminHosting
{
    public static WebApplicationBuilder AddQueueAdminUi(this WebApplicationBuilder builder)
    {
        // Serves wwwroot from the build output's manifest when the app runs from bin/ (tests, dotnet run);
        // a no-op for a published app, whose wwwroot sits beside it.
        builder.WebHost.UseStaticWebAssets();
        var services = builder.Services;
        services.AddQueueCore();
        services.AddQueueAdmin();
        services.AddCheckedOptions<AdminOptions, AdminOptionsRules>();
        // One key ring for every Admin process (a login made on one is valid on all), kept in the database.
        services.AddDataProtection().SetApplicationName("Queue.Admin");
        services.AddOptions<KeyManagementOptions>().Configure<IServiceProvider>((o, sp) => o.XmlRepository = new DatabaseKeyRing(sp));
        services.AddAuthentication(CookieAuthenticationDefaults.AuthenticationScheme)
            .AddCookie(o =>
            {
                o.LoginPath = "/Account/Login";
                o.LogoutPath = "/Account/Logout";
                o.AccessDeniedPath = "/Account/Login";
                o.Cookie.Name = "queue-admin";
                o.Cookie.HttpOnly = true;
                o.Cookie.SameSite = SameSiteMode.Strict;
                o.SlidingExpiration = true;
                o.ExpireTimeSpan = TimeSpan.FromHours(8);
            });
        services.AddAuthorizationBuilder()
            .AddPolicy(AdminPolicies.Technician, p => p.RequireAuthenticatedUser().RequireClaim(AdminPolicies.TechnicianClaim))
            // Every endpoint needs a signed-in technician unless it opts out explicitly (login, error and health only).
            .SetFallbackPolicy(new AuthorizationPolicyBuilder().RequireAuthenticatedUser().RequireClaim(AdminPolicies.TechnicianClaim).Build());
        services.AddAntiforgery(o =>
        {
            o.Cookie.Name = "queue-admin-af";
            o.Cookie.SameSite = SameSiteMode.Strict;
            o.FormFieldName = "__RequestVerificationToken";
        });
        services.AddOptions<CookieAuthenticationOptions>(CookieAuthenticationDefaults.AuthenticationScheme)
            .Configure<IOptions<AdminOptions>>((o, admin) => o.Cookie.SecurePolicy = SecurePolicy(admin.Value));
        services.AddOptions<AntiforgeryOptions>().Configure<IOptions<AdminOptions>>((o, admin) => o.Cookie.SecurePolicy = SecurePolicy(admin.Value));
        services.AddRazorPages(o => o.Conventions
            .AuthorizeFolder("/", AdminPolicies.Technician)
            .AllowAnonymousToPage("/Account/Login")
            .AllowAnonymousToPage("/Error"))
            .AddMvcOptions(o =>
            {
                var m = o.ModelBindingMessageProvider;
                m.SetAttemptedValueIsInvalidAccessor((value, field) => $"'{value}' is not valid here: enter a whole number.");
                m.SetValueMustBeANumberAccessor(field => "Enter a whole number.");
                m.SetValueMustNotBeNullAccessor(field => "Enter a value.");
            });
        return builder;
    }

    /// <summary>HTTPS-only cookies unless the deployment says it has no HTTPS (<see cref="AdminOptions.AllowHttp"/>).</summary>
    private static CookieSecurePolicy SecurePolicy(AdminOptions admin) =>
        admin.AllowHttp ? CookieSecurePolicy.SameAsRequest : CookieSecurePolicy.Always;

    public static WebApplication UseQueueAdminUi(this WebApplication app)
    {
        app.UseExceptionHandler("/Error");
        app.UseStatusCodePages();
        app.Use(async (ctx, next) =>
        {
            // No script at all, nothing from other origins (the machines are offline anyway), no framing.
            var h = ctx.Response.Headers;
            h.ContentSecurityPolicy = "default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'";
            h.XFrameOptions = "DENY";
            h.XContentTypeOptions = "nosniff";
            h["Referrer-Policy"] = "same-origin";
            await next(ctx);
        });
        app.UseStaticFiles();
        app.UseRouting();
        app.UseAuthentication();
        app.UseAuthorization();
        app.MapGet("/healthz", () => TypedResults.Ok("ok")).AllowAnonymous();
        app.MapRazorPages();
        return app;
    }
}
