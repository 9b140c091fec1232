using Prometheus;
using Queue.Core.Fairness;
using Queue.Core.Hosting;

namespace Queue.Api.Fairness;

/// <summary>
/// Samples the ready work every few seconds and, every minute, computes this process's fairness metrics and publishes
/// them on /metrics (docs/DESIGN.md "Fairness"). A failed round is logged and retried at the next one.
/// </summary>
public sealed partial class FairnessExporter(IServiceProvider services, TimeProvider clock, ILogger<FairnessExporter> logger) : BackgroundService
{
    private static readonly Gauge Jain = Metrics.CreateGauge("queue_fairness_jain",
        "Jain's index of claims received / entitled across tenants with ready work, over the last whole minute (1 = weight-fair).");

    private static readonly Gauge JainMin = Metrics.CreateGauge("queue_fairness_jain_min",
        "The lowest per-minute Jain's index over the monitor's window (15 min).");

    private static readonly Gauge Stretch = Metrics.CreateGauge("queue_fairness_stretch",
        "Job stretch (turnaround / the job's service time alone on the whole pool) of jobs finished in the last hour, by size bucket.",
        new GaugeConfiguration { LabelNames = ["bucket", "quantile"] });

    private static readonly Gauge Starvation = Metrics.CreateGauge("queue_fairness_starvation_seconds",
        "Longest time a job of the tenant had ready items without a claim, over the monitor's window (15 min).",
        new GaugeConfiguration { LabelNames = ["tenant"] });

    private static int mirrored;

    /// <summary>The fairness gauges on the "Queue" meter (<see cref="Infrastructure.ApiMeters"/>).</summary>
    public static void Mirror()
    {
        if (Interlocked.Exchange(ref mirrored, 1) == 0)
        {
            foreach (var g in new[] { Jain, JainMin, Stretch, Starvation })
            {
                Infrastructure.ApiMeters.Mirror(Core.Telemetry.QueueTracing.Meter, g);
            }
        }
    }

    public static void Initialise()
    {
        Jain.Set(1);
        JainMin.Set(1);
    }

    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        // Resolved here, not in the constructor: the data source exists only once DatabaseBootstrap has run at start-up.
        var monitor = services.GetRequiredService<FairnessMonitor>();
        var nextReport = clock.GetUtcNow() + TimeSpan.FromMinutes(1);
        await PeriodicLoop.RunAsync(FairnessMonitor.SampleEvery, async ct =>
        {
            await monitor.SampleAsync(ct);
            if (clock.GetUtcNow() >= nextReport)
            {
                nextReport = clock.GetUtcNow() + TimeSpan.FromMinutes(1);
                Publish(await monitor.ReportAsync(ct));
            }
        }, ex => LogFailed(logger, ex), stoppingToken, clock);
    }

    private static void Publish(FairnessSnapshot s)
    {
        Jain.Set(s.LastMinuteJain ?? 1);
        JainMin.Set(s.MinJain ?? 1);
        foreach (var b in s.Stretch)
        {
            Stretch.WithLabels(b.Name, "0.5").Set(b.P50);
            Stretch.WithLabels(b.Name, "0.95").Set(b.P95);
        }
        foreach (var t in s.Starvation)
        {
            Starvation.WithLabels(t.Tenant).Set(t.Seconds);
        }
    }

    [LoggerMessage(EventId = 5001, Level = LogLevel.Warning, Message = "The fairness metrics could not be computed this round; the next round tries again")]
    private static partial void LogFailed(ILogger logger, Exception exception);
}
