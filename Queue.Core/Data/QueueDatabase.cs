using System.Data;
using System.Diagnostics.CodeAnalysis;
using EvolveDb;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using MySqlConnector;

namespace Queue.Core.Data;

public static class QueueDatabase
{
    /// <summary>
    /// The connection string from <c>ConnectionStrings:Queue</c> or <c>QUEUE_DB</c>. A service never starts a database
    /// by itself: without one it stops at start-up and says how to run locally.
    /// </summary>
    public static string ResolveConnectionString(IConfiguration configuration)
    {
        var configured = configuration.GetConnectionString("Queue");
        if (string.IsNullOrWhiteSpace(configured))
        {
            configured = configuration["QUEUE_DB"];
        }
        if (string.IsNullOrWhiteSpace(configured))
        {
            throw new InvalidOperationException(NoDatabaseMessage);
        }
        return configured;
    }

    public const string NoDatabaseMessage =
        "No database is configured: set ConnectionStrings__Queue (or QUEUE_DB) to a MariaDB connection string. "
        + "To run everything locally on a private MariaDB, use ./run.sh.";

    /// <summary>
    /// Registers the one <see cref="MySqlDataSource"/> of the process. It is built from <see cref="DatabaseBootstrap"/>,
    /// which resolves the database and applies the migrations as the host starts.
    /// </summary>
    public static IServiceCollection AddQueueDatabase(this IServiceCollection services)
    {
        services.AddSingleton<DatabaseBootstrap>();
        services.AddHostedService(sp => sp.GetRequiredService<DatabaseBootstrap>());
        services.AddSingleton(sp => new MySqlDataSourceBuilder(Normalize(sp.GetRequiredService<DatabaseBootstrap>().ConnectionString)).Build());
        return services;
    }

    public static string Normalize(string connectionString)
    {
        var csb = new MySqlConnectionStringBuilder(connectionString)
        {
            // Dapper maps DATETIME to DateTime; every time we store is UTC.
            DateTimeKind = MySqlDateTimeKind.Utc,
            // Multi-row statements in one round trip (batched claims and completions).
            AllowUserVariables = true,
        };
        // A database that hangs (stopped, or its host unreachable) must turn into a quick 503, not a request that waits
        // the driver's default 15 s for a connection; an explicit setting in the connection string wins.
        if (csb.ConnectionTimeout == 15)
        {
            csb.ConnectionTimeout = 5;
        }
        if (csb.MaximumPoolSize == 100)
        {
            csb.MaximumPoolSize = 200;
        }
        return csb.ConnectionString;
    }

    /// <summary>Every transaction the application opens is READ COMMITTED, whatever the server's default is.</summary>
    public static ValueTask<MySqlTransaction> BeginReadCommittedAsync(this MySqlConnection connection, CancellationToken ct) =>
        connection.BeginTransactionAsync(IsolationLevel.ReadCommitted, ct);
}

public static class Migrations
{
    /// <summary>The metadata table Evolve keeps; /readyz checks it.</summary>
    public const string MetadataTable = "changelog";

    public static string Location => Path.Combine(AppContext.BaseDirectory, "migrations");

    /// <summary>
    /// Applies <c>migrations/*.sql</c> with Evolve, holding a <c>GET_LOCK</c> named after the database, so several
    /// processes starting at once against one empty database apply each migration exactly once. Not Evolve's cluster
    /// mode: its lock is one name for the whole server, tried every 3 s, so services or tests starting on other
    /// databases of the same server waited for each other's migrations, in 3 s steps.
    /// </summary>
    [SuppressMessage("Reliability", "CA2000", Justification = "The connections are disposed by the using declarations.")]
    public static async Task ApplyAsync(string connectionString, ILogger logger, CancellationToken ct = default)
    {
        await using var lockConnection = new MySqlConnection(connectionString);
        await lockConnection.OpenAsync(ct);
        await using (var take = new MySqlCommand(Sql.OpsSql.TakeMigrationLock, lockConnection))
        {
            // A migration may run for minutes on a large database: wait as long as it takes, a minute per try, so a
            // cancelled start-up stops waiting within a minute.
            take.Parameters.AddWithValue("@Seconds", 60);
            while (Convert.ToInt64(await take.ExecuteScalarAsync(ct), System.Globalization.CultureInfo.InvariantCulture) != 1)
            {
                ct.ThrowIfCancellationRequested();
            }
        }
        try
        {
            await using var conn = new MySqlConnection(connectionString);
            await conn.OpenAsync(ct);
            // Evolve is synchronous; this runs once at start-up, never on a request path.
            await Task.Run(() =>
            {
                var evolve = new Evolve(conn, msg => MigrationLog.Message(logger, msg), EvolveDb.Dialect.DBMS.MySQL)
                {
                    Locations = [Location],
                    EnableClusterMode = false,
                    IsEraseDisabled = true,
                    MetadataTableName = MetadataTable,
                    // Migrations are numbered per area (V10-19 submission, V20-29 claims, ...); a database created before a
                    // lower-numbered file was added must still take it.
                    OutOfOrder = true,
                };
                evolve.Migrate();
            }, ct);
        }
        finally
        {
            // Closing the session would release it too, but a pooled session is reset only when next used.
            await using var release = new MySqlCommand(Sql.OpsSql.ReleaseMigrationLock, lockConnection);
            await release.ExecuteScalarAsync(CancellationToken.None);
        }
    }

    /// <summary>True when every migration file has been applied.</summary>
    public static async Task<bool> AreAppliedAsync(MySqlDataSource dataSource, CancellationToken ct)
    {
        var expected = Directory.GetFiles(Location, "V*__*.sql").Length;
        await using var conn = await dataSource.OpenConnectionAsync(ct);
        await using var cmd = new MySqlCommand(Sql.OpsSql.CountAppliedMigrations, conn);
        var applied = Convert.ToInt32(await cmd.ExecuteScalarAsync(ct), System.Globalization.CultureInfo.InvariantCulture);
        return applied >= expected;
    }
}

internal static partial class MigrationLog
{
    [LoggerMessage(EventId = 100, Level = LogLevel.Information, Message = "Migrations (Evolve): {Message}")]
    public static partial void Message(ILogger logger, string message);
}
