using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Core.Hosting;

namespace Queue.Core.Cluster;

/// <summary>
/// Measures <see cref="DatabaseClock"/>'s offset as the host starts (before any request is served) and every
/// <c>Cluster:ClockSyncSeconds</c> after. A failed measurement keeps the last offset; while none has succeeded yet,
/// it is tried again every second, and leases are refused (<see cref="DatabaseClock.ThrowIfNotSynced"/>).
/// </summary>
public sealed partial class DatabaseClockSync(IServiceProvider services, DatabaseClock clock, IOptions<ClusterOptions> options,
    ILogger<DatabaseClockSync> logger) : BackgroundService
{
    public override async Task StartAsync(CancellationToken cancellationToken)
    {
        try
        {
            await clock.SyncAsync(services.GetRequiredService<MySqlDataSource>(), cancellationToken);
            LogOffset(logger, clock.Offset.TotalMilliseconds);
        }
        catch (MySqlException ex)
        {
            LogFailed(logger, ex);
        }
        await base.StartAsync(cancellationToken);
    }

    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        // Until the first measurement succeeds, leases are refused (DatabaseClock.ThrowIfNotSynced): try every second.
        while (!clock.Synced && !stoppingToken.IsCancellationRequested)
        {
            try
            {
                await Task.Delay(TimeSpan.FromSeconds(1), clock, stoppingToken);
                await clock.SyncAsync(services.GetRequiredService<MySqlDataSource>(), stoppingToken);
                LogOffset(logger, clock.Offset.TotalMilliseconds);
            }
            catch (MySqlException ex)
            {
                LogFailed(logger, ex);
            }
            catch (OperationCanceledException) when (stoppingToken.IsCancellationRequested)
            {
                return;
            }
        }
        await PeriodicLoop.RunAsync(TimeSpan.FromSeconds(options.Value.ClockSyncSeconds),
            c => clock.SyncAsync(services.GetRequiredService<MySqlDataSource>(), c), ex => LogFailed(logger, ex), stoppingToken);
    }

    [LoggerMessage(EventId = 9000, Level = LogLevel.Information, Message = "Database clock offset: {OffsetMs} ms (database minus host)")]
    private static partial void LogOffset(ILogger logger, double offsetMs);

    [LoggerMessage(EventId = 9001, Level = LogLevel.Warning, Message = "Could not read the database's clock; the last offset stays in use")]
    private static partial void LogFailed(ILogger logger, Exception exception);
}
