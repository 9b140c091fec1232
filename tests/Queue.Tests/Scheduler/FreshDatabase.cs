using Dapper;
using MySqlConnector;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Scheduler;

/// <summary>
/// A database of its own for one test. A rewrite ranks every job in the database, so tests that assert exact values
/// must not share one, even within a class.
/// </summary>
internal sealed class FreshDatabase : DatabaseFixture, IAsyncDisposable
{
    private readonly bool ownServer;

    private FreshDatabase(bool ownServer) => this.ownServer = ownServer;

    /// <param name="ownServer">
    /// On a server of its own, for a test that reads the server's counters (they count every session of the server).
    /// </param>
    public static async Task<FreshDatabase> CreateAsync(bool ownServer = false)
    {
        var db = new FreshDatabase(ownServer);
        await db.InitializeAsync();
        return db;
    }

    protected override Task<Queue.Local.PrivateMariaDb> ServerAsync() => ownServer ? Queue.Local.PrivateMariaDb.StartEphemeralAsync() : base.ServerAsync();

    public override async Task DisposeAsync()
    {
        await base.DisposeAsync();
        if (ownServer)
        {
            await Server.DisposeAsync();
        }
    }

    public async Task<long> NewTenantAsync() => (await NewCustomerAsync()).Tenant.Id;

    /// <summary>
    /// A second data source on this database whose commands the driver gives up on (KILL QUERY) after
    /// <paramref name="seconds"/>, as it does after 30 s by default: for statements that must outlast it.
    /// </summary>
    public MySqlDataSource WithCommandTimeout(int seconds) =>
        new(new MySqlConnectionStringBuilder(DataSource.ConnectionString) { DefaultCommandTimeout = (uint)seconds }.ConnectionString);

    /// <summary>
    /// Waits, up to 10 s, until a transaction in this database waits for a lock, or <paramref name="task"/> ends. Only
    /// this database's sessions count: tests in other classes run beside this one on the same server. Read every 250 ms:
    /// the server refreshes information_schema.innodb_trx only when nobody has read it for 0.1 s, so reads every 25 ms
    /// saw the table as it was at the first one, without the wait, until the 10 s were up.
    /// </summary>
    public async Task WaitForLockWaitAsync(Task task)
    {
        await using var conn = await DataSource.OpenConnectionAsync();
        await Eventually.HoldsAsync(async () => task.IsCompleted || await conn.ExecuteScalarAsync<long>("""
            SELECT COUNT(*) FROM information_schema.innodb_trx t
            JOIN information_schema.processlist p ON p.id = t.trx_mysql_thread_id
            WHERE t.trx_state = 'LOCK WAIT' AND p.db = DATABASE()
            """) > 0, TimeSpan.FromSeconds(10), TimeSpan.FromMilliseconds(250));
    }

    async ValueTask IAsyncDisposable.DisposeAsync() => await DisposeAsync();
}
