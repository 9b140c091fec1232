using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Mvc.Testing;
using Queue.Admin;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Admin;

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
