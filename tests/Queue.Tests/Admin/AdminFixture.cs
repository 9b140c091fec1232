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

/// <summary>A database, the Admin app on it, and a technician who can sign in.</summary>
public class AdminFixture : DatabaseFixture
{
    public const string Password = "correct horse battery staple";

    public AdminFactory Admin { get; private set; } = null!;

    public string Login { get; } = "tech-" + Guid.NewGuid().ToString("N")[..8];

    public long TechnicianId { get; private set; }

    public AdminSeed Seed { get; private set; } = null!;

    public override async Task InitializeAsync()
    {
        await base.InitializeAsync();
        TechnicianId = (await Technicians.CreateAsync(Login, Password, default)).Id;
        Seed = new AdminSeed(DataSource);
        Admin = new AdminFactory(ConnectionString);
        _ = Admin.Server;
    }

    public override async Task DisposeAsync()
    {
        await Admin.DisposeAsync();
        await base.DisposeAsync();
    }

    public async Task<AdminBrowser> SignedInAsync()
    {
        var b = Admin.Browser();
        await b.SignInAsync(Login, Password);
        return b;
    }
}
