using Dapper;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Core;
using Queue.Core.Data;
using Queue.Local;
using Queue.Core.Security;

namespace Queue.Tests.Infrastructure;

/// <summary>A fresh database with the real migrations applied (a copy of <see cref="MigratedTemplate"/>), one per test class.</summary>
public class DatabaseFixture : IAsyncLifetime
{
    public PrivateMariaDb Server { get; private set; } = null!;

    public string ConnectionString { get; private set; } = "";

    public MySqlDataSource DataSource { get; private set; } = null!;

    public string DatabaseName { get; } = "t_" + Guid.NewGuid().ToString("N")[..16];

    /// <summary>The server to make the database on: the one every class shares, unless a test needs one to itself.</summary>
    protected virtual Task<PrivateMariaDb> ServerAsync() => SharedMariaDb.GetAsync();

    public virtual async Task InitializeAsync()
    {
        Server = await ServerAsync();
        ConnectionString = await Server.CreateDatabaseAsync(DatabaseName);
        if (Server == await SharedMariaDb.GetAsync())
        {
            await (await MigratedTemplate.GetAsync()).CopyIntoAsync(ConnectionString);
        }
        else
        {
            await Migrations.ApplyAsync(ConnectionString, Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance);
        }
        DataSource = new MySqlDataSourceBuilder(QueueDatabase.Normalize(ConnectionString)).Build();
    }

    public virtual async Task DisposeAsync()
    {
        await DataSource.DisposeAsync();
        await using var conn = new MySqlConnection(Server.ServerConnectionString);
        await conn.OpenAsync();
        await conn.ExecuteAsync($"DROP DATABASE IF EXISTS `{DatabaseName}`");
    }

    public TenantService Tenants => new(DataSource, TimeProvider.System);

    public ApiKeyService Keys => new(DataSource, TimeProvider.System, Options.Create(new AuthOptions { KeyCacheSeconds = 0 }));

    public TechnicianService Technicians => new(DataSource, TimeProvider.System);

    /// <summary>Creates a tenant with a unique name and a customer key for it.</summary>
    public async Task<(Tenant Tenant, string Key)> NewCustomerAsync(string? name = null, TenantSettings? settings = null)
    {
        var tenant = await Tenants.CreateAsync(name ?? "t" + Guid.NewGuid().ToString("N")[..10], settings ?? new TenantSettings(["text", "thumbnail"]), default);
        var key = await Keys.IssueAsync(KeyRole.Customer, tenant.Id, "test", default);
        return (tenant, key.Secret);
    }

    public async Task<string> NewWorkerKeyAsync() => (await Keys.IssueAsync(KeyRole.Worker, null, "test", default)).Secret;
}
