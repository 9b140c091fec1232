using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Queue.Core.Data;

/// <summary>
/// Finds the database and applies the migrations before any hosted service or the web server starts,
/// so no request and no scheduled job ever sees a half-migrated schema.
/// </summary>
public sealed class DatabaseBootstrap(IConfiguration configuration, ILogger<DatabaseBootstrap> logger) : IHostedLifecycleService
{
    private string? connectionString;

    public string ConnectionString => connectionString
        ?? throw new InvalidOperationException("the database is not resolved yet: DatabaseBootstrap runs when the host starts");

    /// <summary>Resolves the connection string now; also used by command-line tools that never start the host.</summary>
    public async Task<string> EnsureAsync(CancellationToken ct)
    {
        if (connectionString is null)
        {
            var cs = QueueDatabase.ResolveConnectionString(configuration);
            await Migrations.ApplyAsync(cs, logger, ct);
            connectionString = cs;
        }
        return connectionString;
    }

    public Task StartingAsync(CancellationToken cancellationToken) => EnsureAsync(cancellationToken);

    public Task StartAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StartedAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StoppingAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StopAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StoppedAsync(CancellationToken cancellationToken) => Task.CompletedTask;
}
