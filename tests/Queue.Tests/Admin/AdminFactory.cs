using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Mvc.Testing;
using Queue.Admin;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Admin;

/// <summary>The real Queue.Admin, in process, against a test class's database.</summary>
/// <param name="allowHttp">Admin:AllowHttp: the test server speaks plain HTTP, so its cookies may too.</param>
public sealed class AdminFactory(string connectionString, bool allowHttp = true) : WebApplicationFactory<AdminEntry>
{
    protected override void ConfigureWebHost(IWebHostBuilder builder)
    {
        builder.UseSetting("ConnectionStrings:Queue", connectionString);
        builder.UseSetting("Auth:KeyCacheSeconds", "0");
        builder.UseSetting("Admin:AllowHttp", allowHttp ? "true" : "false");
    }

    /// <summary>A client that keeps cookies like a browser and shows redirects instead of following them.</summary>
    public AdminBrowser Browser() =>
        new(CreateClient(new WebApplicationFactoryClientOptions { AllowAutoRedirect = false, HandleCookies = true }));
}
