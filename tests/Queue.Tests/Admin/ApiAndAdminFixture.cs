using AngleSharp.Html.Dom;
using Queue.Core.Admin;
using Queue.Tests.Work;

namespace Queue.Tests.Admin;

/// <summary>
/// The real Api (default policy, counters flushed every 200 ms) and the real Admin on one database, so a claim travels
/// the whole way: Api memory, <c>tenant_counters</c>, the Scheduler's minute snapshot, the dashboard.
/// </summary>
public sealed class ApiAndAdminFixture : WorkFixture
{
    public AdminFactory Admin { get; private set; } = null!;

    public string Login { get; } = "tech-" + Guid.NewGuid().ToString("N")[..8];

    protected override IDictionary<string, string?> Settings => new Dictionary<string, string?>
    {
        ["Claims:Prefetch"] = "0",
        ["Claims:StatsFlushMilliseconds"] = "200",
    };

    public override async Task InitializeAsync()
    {
        await base.InitializeAsync();
        await Technicians.CreateAsync(Login, AdminFixture.Password, default);
        Admin = new AdminFactory(ConnectionString);
        _ = Admin.Server;
    }

    public override async Task DisposeAsync()
    {
        await Admin.DisposeAsync();
        await base.DisposeAsync();
    }

    /// <summary>The Scheduler's minute snapshot, taken for the minute of <paramref name="at"/> on the real clock.</summary>
    public Task<bool> SnapshotAsync(DateTimeOffset at) => new SnapshotService(DataSource, TimeProvider.System).TakeAsync(at);

    public async Task<IHtmlDocument> DashboardAsync()
    {
        using var b = Admin.Browser();
        await b.SignInAsync(Login, AdminFixture.Password);
        return await b.GetAsync("/");
    }
}
