using Queue.Tests.Infrastructure;

namespace Queue.Tests.Scheduler;

/// <summary>
/// A database of its own for one test. A rewrite ranks every job in the database, so tests that assert exact values
/// must not share one, even within a class.
/// </summary>
internal sealed class FreshDatabase : DatabaseFixture, IAsyncDisposable
{
    public static async Task<FreshDatabase> CreateAsync()
    {
        var db = new FreshDatabase();
        await db.InitializeAsync();
        return db;
    }

    public async Task<long> NewTenantAsync() => (await NewCustomerAsync()).Tenant.Id;

    async ValueTask IAsyncDisposable.DisposeAsync() => await DisposeAsync();
}
