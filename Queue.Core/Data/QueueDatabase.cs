using System.Data;
using System.Diagnostics.CodeAnalysis;
using EvolveDb;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using MySqlConnector;
using Queue.Core.Local;

namespace Queue.Core.Data;

public static class QueueDatabase
{
    /// <summary>
    /// The connection string from <c>ConnectionStrings:Queue</c> or <c>QUEUE_DB</c>. When neither is set, a private
    /// MariaDB under <c>.queue/db</c> of the working directory is started or reused, the same one <c>./run.sh</c> uses.
    /// </summary>
    public static async Task<string> ResolveConnectionStringAsync(IConfiguration configuration, CancellationToken ct = default)
    {
        var configured = configuration.GetConnectionString("Queue");
        if (string.IsNullOrWhiteSpace(configured))
        {
            configured = configuration["QUEUE_DB"];
        }
        if (!string.IsNullOrWhiteSpace(configured))
        {
            return configured;
        }
        var db = await PrivateMariaDb.StartOrAttachAsync(Path.Combine(".queue", "db"), port: 5306, tiedToThisProcess: false, ct);
        const string name = "queue";
        await using (var conn = new MySqlConnection(db.ServerConnectionString))
        {
            await conn.OpenAsync(ct);
            await using var cmd = new MySqlCommand("CREATE DATABASE IF NOT EXISTS queue CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci", conn);
            await cmd.ExecuteNonQueryAsync(ct);
        }
        return db.ConnectionStringFor(name);
    }

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
    /// Applies <c>migrations/*.sql</c> with Evolve. Cluster mode takes a <c>GET_LOCK</c> first, so several processes
    /// starting at once against one empty database apply each migration exactly once.
    /// </summary>
    [SuppressMessage("Reliability", "CA2000", Justification = "The connection is disposed by the using declaration.")]
    public static async Task ApplyAsync(string connectionString, ILogger logger, CancellationToken ct = default)
    {
        await using var conn = new MySqlConnection(connectionString);
        await conn.OpenAsync(ct);
        // Evolve is synchronous; this runs once at start-up, never on a request path.
        await Task.Run(() =>
        {
            var evolve = new Evolve(conn, msg => MigrationLog.Message(logger, msg), EvolveDb.Dialect.DBMS.MySQL)
            {
                Locations = [Location],
                EnableClusterMode = true,
                IsEraseDisabled = true,
                MetadataTableName = MetadataTable,
                // Migrations are numbered per area (V10-19 submission, V20-29 claims, ...); a database created before a
                // lower-numbered file was added must still take it.
                OutOfOrder = true,
            };
            evolve.Migrate();
        }, ct);
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
    [LoggerMessage(Level = LogLevel.Information, Message = "evolve: {Message}")]
    public static partial void Message(ILogger logger, string message);
}
