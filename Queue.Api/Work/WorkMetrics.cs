using Prometheus;
using Queue.Core.Claims;

namespace Queue.Api.Work;

/// <summary>
/// <c>queue_items{tenant,state}</c>, computed from the jobs counters (not by scanning items) when /metrics is served.
/// /metrics is anonymous, so its database cost is bounded whatever the scrapers do: one refresh at a time per app
/// (single flight, not one per scrape), at most one per 2 s, at most 2 s each, and after a slow or failed one the next
/// waits ten times as long as that one took (at least 10 s after a failure). A scrape waits at most 1 s for a refresh
/// it started and otherwise serves the last values. One per app: the gauge is process-wide (the Prometheus registry
/// is), but each app refreshes it from its own database, so several apps in one process (tests) never measure each
/// other's. See docs/DESIGN.md "Operations".
/// </summary>
internal sealed class WorkMetrics
{
    private const int FreshMilliseconds = 2000;
    private const int FailedMilliseconds = 10_000;
    private static readonly TimeSpan QueryTimeout = TimeSpan.FromSeconds(2);
    private static readonly TimeSpan ScrapeWait = TimeSpan.FromSeconds(1);

    private static readonly Gauge Items = Metrics.CreateGauge("queue_items", "Items per tenant and state (ready counts expired leases).",
        new GaugeConfiguration { LabelNames = ["tenant", "state"] });

    private static int mirrored;

    /// <summary>The app whose database the OpenTelemetry instrument refreshes from: the last one built (one per process outside tests).</summary>
    private static volatile WorkMetrics? latest;

    private readonly WorkStats stats;
    private readonly Lock gate = new();
    private Task? refreshing;
    private long nextAt;

    public WorkMetrics(WorkStats stats)
    {
        this.stats = stats;
        latest = this;
    }

    /// <summary>
    /// queue_items on the "Queue" meter (<see cref="ApiMeters"/>). A collection starts the same bounded refresh a scrape
    /// does, without waiting for it: the values are at most one refresh old, as a scrape's may be.
    /// </summary>
    public static void Mirror()
    {
        if (Interlocked.Exchange(ref mirrored, 1) == 0)
        {
            Infrastructure.ApiMeters.Mirror(Core.Telemetry.QueueTracing.Meter, Items, () => _ = latest?.RefreshAsync(CancellationToken.None));
        }
    }

    public async Task RefreshAsync(CancellationToken ct)
    {
        Task task;
        lock (gate)
        {
            if (refreshing is null && Environment.TickCount64 < nextAt)
            {
                return;
            }
            // Not the scrape's token: a scraper that hangs up does not cancel the refresh the next one will read.
            task = refreshing ??= Task.Run(RunAsync, CancellationToken.None);
        }
        await Task.WhenAny(task, Task.Delay(ScrapeWait, ct));
    }

    private async Task RunAsync()
    {
        var started = Environment.TickCount64;
        var ok = false;
        try
        {
            using var timeout = new CancellationTokenSource(QueryTimeout);
            foreach (var t in await stats.ItemCountsAsync(timeout.Token))
            {
                Items.WithLabels(t.Tenant, "ready").Set(t.Ready);
                Items.WithLabels(t.Tenant, "leased").Set(t.Leased);
                Items.WithLabels(t.Tenant, "done").Set(t.Done);
                Items.WithLabels(t.Tenant, "dead").Set(t.Dead);
                Items.WithLabels(t.Tenant, "cancelled").Set(t.Cancelled);
            }
            ok = true;
        }
        catch (Exception ex) when (ex is MySqlConnector.MySqlException or OperationCanceledException or ObjectDisposedException or InvalidOperationException)
        {
            // A scrape must still answer when the database is away; the gauge keeps its last values.
        }
        finally
        {
            var now = Environment.TickCount64;
            lock (gate)
            {
                nextAt = now + Math.Max(ok ? FreshMilliseconds : FailedMilliseconds, (now - started) * 10);
                refreshing = null;
            }
        }
    }
}
