using Prometheus;
using Queue.Core.Claims;

namespace Queue.Api.Work;

/// <summary>
/// <c>queue_items{tenant,state}</c>, computed when /metrics is served, from the jobs counters (not by scanning items),
/// and cached briefly so that several scrapers do not multiply the cost. One per app: the gauge is process-wide (the
/// Prometheus registry is), but each app refreshes it from its own database on its own scrape, so several apps in one
/// process (tests) never measure each other's.
/// </summary>
internal sealed class WorkMetrics(WorkStats stats) : IDisposable
{
    private static readonly Gauge Items = Metrics.CreateGauge("queue_items", "Items per tenant and state (ready counts expired leases).",
        new GaugeConfiguration { LabelNames = ["tenant", "state"] });

    private readonly SemaphoreSlim gate = new(1, 1);
    private long refreshedAt;

    public void Dispose() => gate.Dispose();

    public async Task RefreshAsync(CancellationToken ct)
    {
        if (Volatile.Read(ref refreshedAt) is var at && at != 0 && Environment.TickCount64 - at < 2000)
        {
            return;
        }
        await gate.WaitAsync(ct);
        try
        {
            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(ct);
            timeout.CancelAfter(TimeSpan.FromSeconds(2));
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
            gate.Release();
        }
    }
}
