using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Security;

namespace Queue.Tests.Infrastructure;

/// <summary>A database of a test's own server (one it kills, stops or starves): migrated, with a tenant and its keys.</summary>
internal sealed class OwnDatabase : IAsyncDisposable
{
    private OwnDatabase(MySqlDataSource source, string customerKey, string workerKey)
    {
        Source = source;
        CustomerKey = customerKey;
        WorkerKey = workerKey;
    }

    public MySqlDataSource Source { get; }

    public string CustomerKey { get; }

    public string WorkerKey { get; }

    public static async Task<OwnDatabase> PrepareAsync(string connectionString, string tenant, params string[] tasks)
    {
        await Migrations.ApplyAsync(connectionString, NullLogger.Instance);
        var source = new MySqlDataSourceBuilder(QueueDatabase.Normalize(connectionString)).Build();
        var t = await new TenantService(source, TimeProvider.System).CreateAsync(tenant, new TenantSettings(tasks), default);
        var keys = new ApiKeyService(source, TimeProvider.System, Options.Create(new AuthOptions()));
        var customer = (await keys.IssueAsync(KeyRole.Customer, t.Id, "test", default)).Secret;
        var worker = (await keys.IssueAsync(KeyRole.Worker, null, "test", default)).Secret;
        return new OwnDatabase(source, customer, worker);
    }

    public ValueTask DisposeAsync() => Source.DisposeAsync();
}
