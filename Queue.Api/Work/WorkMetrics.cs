using Prometheus;
using Queue.Core.Claims;

namespace Queue.Api.Work;

/// <summary>
/// <c>queue_items{tenant,state}</c>, computed when Prometheus scrapes, from the jobs counters (not by scanning items),
/// and cached briefly so that several scrapers do not multiply the cost.
/// </summary>
internal static class WorkMetrics
{
    private static readonly Gauge Items = Metrics.CreateGauge("queue_items", "Items per tenant and state (ready counts expired leases).",
        new GaugeConfiguration { LabelNames = ["tenant", "state"] });

    private static readonly SemaphoreSlim Gate = new(1, 1);
    private static IServiceProvider? source;
    private static long refreshedAt;
    private static int attached;

    public static void Attach(IServiceProvider services)
    {
        // The registry is process-wide; the most recently started app (tests start several) is the one measured.
        Volatile.Write(ref source, services);
        if (Interlocked.Exchange(ref attached, 1) == 0)
        {
            Metrics.DefaultRegistry.AddBeforeCollectCallback(RefreshAsync);
        }
    }

    private static async Task RefreshAsync(CancellationToken ct)
    {
        if ((Volatile.Read(ref refreshedAt) is var at && at != 0 && Environment.TickCount64 - at < 2000) || Volatile.Read(ref source) is not { } services)
        {
            return;
        }
        await Gate.WaitAsync(ct);
        try
        {
            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(ct);
            timeout.CancelAfter(TimeSpan.FromSeconds(2));
            // Resolved at scrape time: the data source exists only once the host has started.
            var stats = services.GetRequiredService<WorkStats>();
            foreach (var t in await stats.ItemCountsAsync(timeout.Token))
            {
                Items.WithLabels(t.Tenant, "ready").Set(t.Ready);
                Items.WithLabels(t.Tenant, "leased").Set(t.Leased);
                Items.WithLabels(t.Tenant, "done").Set(t.Done);
                Items.WithLabels(t.Tenant, "dead").Set(t.Dead);
                Items.WithLabels(t.Tenant, "cancelled").Set(t.Cancelled);
            }
            Volatile.Write(ref refreshedAt, Environment.TickCount64);
        }
        catch (Exception ex) when (ex is MySqlConnector.MySqlException or OperationCanceledException or ObjectDisposedException or InvalidOperationException)
        {
            // A scrape must still answer when the database is away; the gauge keeps its last values.
        }
        finally
        {
            Gate.Release();
        }
    }
}
