using Dapper;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Core.Hosting;
using Queue.Core.Sql;

namespace Queue.Core.Claims;

/// <summary>
/// The claim path's background work in an Api process: the one shared poll that wakes long-polling workers for work
/// made elsewhere (other processes' uploads, retries falling due, expiring leases), giving back claimed-ahead items
/// that waited too long, and flushing the in-memory counts. Intervals are wall-clock, not the injected clock: they
/// pace the process, they are not business time.
/// </summary>
/// <remarks>
/// Its dependencies are resolved when it starts, not when it is constructed: the data source exists only after
/// <see cref="Data.DatabaseBootstrap"/> has run, and hosted services are constructed before that.
/// </remarks>
public sealed partial class ClaimBackgroundService(IServiceProvider services, WorkSignal signal, TimeProvider clock,
    IOptions<ClaimOptions> options, ILogger<ClaimBackgroundService> logger) : BackgroundService
{
    private MySqlDataSource db = null!;
    private ClaimDispatcher dispatcher = null!;
    private WorkStats stats = null!;
    private HandoutLog handouts = null!;
    private bool started;

    protected override Task ExecuteAsync(CancellationToken stoppingToken)
    {
        db = services.GetRequiredService<MySqlDataSource>();
        dispatcher = services.GetRequiredService<ClaimDispatcher>();
        stats = services.GetRequiredService<WorkStats>();
        handouts = services.GetRequiredService<HandoutLog>();
        started = true;
        return Task.WhenAll(PollLoopAsync(stoppingToken), WakeLoopAsync(stoppingToken), MaintenanceLoopAsync(stoppingToken),
            HandoutLoopAsync(stoppingToken), StatsLoopAsync(stoppingToken));
    }

    /// <summary>
    /// New items committed by any process (docs/DESIGN.md "Scaling out": wake-ups across processes). Also while this
    /// process holds claimed-ahead items: the signal then sends the next /next to a claim transaction, so another
    /// process's submission takes its turn within this interval instead of waiting behind the buffer.
    /// </summary>
    private Task WakeLoopAsync(CancellationToken ct)
    {
        var watch = new NewItemWatch(signal);
        return PeriodicLoop.RunAsync(TimeSpan.FromMilliseconds(options.Value.WakeMilliseconds), async c =>
        {
            if (signal.Waiters > 0 || dispatcher.Buffered > 0)
            {
                var before = signal.Local;
                await using var conn = await db.OpenConnectionAsync(c);
                watch.Saw(before, await conn.ExecuteScalarAsync<long>(new CommandDefinition(ClaimSql.NewestItem, cancellationToken: c)));
            }
        }, ex => LogBackgroundFailed(logger, ex, "wake"), ct);
    }

    private Task PollLoopAsync(CancellationToken ct) =>
        PeriodicLoop.RunAsync(TimeSpan.FromMilliseconds(options.Value.PollMilliseconds), async c =>
        {
            if (signal.Waiters > 0)
            {
                await using var conn = await db.OpenConnectionAsync(c);
                var any = await conn.ExecuteScalarAsync<long>(new CommandDefinition(ClaimSql.AnyLaneAvailable,
                    new { Now = clock.GetUtcNow().UtcDateTime }, cancellationToken: c));
                if (any > 0)
                {
                    signal.Notify();
                }
            }
        }, ex => LogBackgroundFailed(logger, ex, "poll"), ct);

    private Task MaintenanceLoopAsync(CancellationToken ct) =>
        PeriodicLoop.RunAsync(TimeSpan.FromMilliseconds(Math.Max(50, options.Value.PrefetchHoldMilliseconds / 4)),
            c => dispatcher.ReleaseStaleAsync(all: false, c), ex => LogBackgroundFailed(logger, ex, "release"), ct);

    private Task HandoutLoopAsync(CancellationToken ct) =>
        PeriodicLoop.RunAsync(TimeSpan.FromMilliseconds(options.Value.HandoutFlushMilliseconds), c => handouts.FlushAsync(all: false, c),
            ex => LogBackgroundFailed(logger, ex, "handouts"), ct);

    private Task StatsLoopAsync(CancellationToken ct) =>
        PeriodicLoop.RunAsync(TimeSpan.FromMilliseconds(options.Value.StatsFlushMilliseconds), stats.FlushAsync,
            ex => LogBackgroundFailed(logger, ex, "stats"), ct);

    public override async Task StopAsync(CancellationToken cancellationToken)
    {
        await base.StopAsync(cancellationToken);
        if (!started)
        {
            return;
        }
        // A clean shutdown writes down the leases it handed out from memory, gives back what it claimed ahead and keeps
        // the last counts; a crash leaves the first two to the reservation expiry (seconds) and loses at most one flush
        // interval of counts.
        try
        {
            await handouts.FlushAsync(all: true, cancellationToken);
            await dispatcher.ReleaseStaleAsync(all: true, cancellationToken);
            await stats.FlushAsync(cancellationToken);
        }
        catch (Exception ex) when (ex is MySqlException or OperationCanceledException or TimeoutException or InvalidOperationException)
        {
            LogBackgroundFailed(logger, ex, "shutdown");
        }
    }

    [LoggerMessage(EventId = 3003, Level = LogLevel.Warning, Message = "The claim path's background work ({What}) failed; it runs again at its next interval")]
    private static partial void LogBackgroundFailed(ILogger logger, Exception exception, string what);
}
