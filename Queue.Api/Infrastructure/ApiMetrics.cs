using System.Diagnostics;
using MySqlConnector;
using Prometheus;
using Queue.Core.Data;
using Queue.Core.Sql;

namespace Queue.Api.Infrastructure;

/// <summary>Process-wide Prometheus instruments of the Api. Created at start-up so every series exists from the first scrape.</summary>
public static class ApiMetrics
{
    public static readonly Counter Claims = Metrics.CreateCounter("queue_claims_total", "Items handed out by POST /next.");

    public static readonly Counter LeasesExpired = Metrics.CreateCounter("queue_leases_expired_total", "Leases that expired and were reclaimed.");

    public static readonly Counter Completions = Metrics.CreateCounter("queue_completions_total", "Items completed by workers.");

    public static readonly Counter OrderingRewrites = Metrics.CreateCounter("queue_ordering_rewrites_total",
        "Ordering rewrites completed by the Scheduler cluster, read from rewrite_log (refreshed at most every few seconds).");

    public static readonly Gauge ReplicaLag = Metrics.CreateGauge("queue_replica_lag_seconds",
        "The read replica's lag behind the primary (Seconds_Behind_Master), -1 when it is stopped or not replicating; 0 without a replica.");

    public static readonly Gauge ReadsFromReplica = Metrics.CreateGauge("queue_reads_from_replica",
        "1 while reads that may lag go to the replica, 0 while they go to the primary.");

    /// <summary>How stale the rewrite count may be: a scrape reads the database at most this often.</summary>
    private static readonly TimeSpan RewriteCountCache = TimeSpan.FromSeconds(5);

    /// <summary>Touches every series so that Prometheus sees zeros before the first event.</summary>
    public static void Initialise()
    {
        Claims.Inc(0);
        LeasesExpired.Inc(0);
        Completions.Inc(0);
        OrderingRewrites.Inc(0);
    }

    /// <summary>The replica's lag and whether reads use it, as the last check found them (no database call per scrape).</summary>
    public static void TrackReplica(IServiceProvider services)
    {
        // Resolved at scrape time: the read source exists only once the host has started.
        Metrics.DefaultRegistry.AddBeforeCollectCallback(() =>
        {
            var reads = services.GetRequiredService<ReadSource>();
            if (!reads.HasReplica)
            {
                return;
            }
            ReplicaLag.Set(reads.LagSeconds ?? -1);
            ReadsFromReplica.Set(reads.ReplicaInUse ? 1 : 0);
        });
    }

    /// <summary>
    /// The rewrites happen in the Scheduler, another process, so each scrape brings the counter up to the number of
    /// rewrite_log rows (which are never deleted, so the count only grows). A database that is slow or down costs the
    /// scrape at most a second and leaves the last value in place.
    /// </summary>
    public static void TrackRewrites(IServiceProvider services)
    {
        var gate = new SemaphoreSlim(1, 1);
        var last = 0L;
        Metrics.DefaultRegistry.AddBeforeCollectCallback(async ct =>
        {
            if ((last != 0 && Stopwatch.GetElapsedTime(last) < RewriteCountCache) || !await gate.WaitAsync(0, ct))
            {
                return;
            }
            try
            {
                using var timeout = CancellationTokenSource.CreateLinkedTokenSource(ct);
                timeout.CancelAfter(TimeSpan.FromSeconds(1));
                await using var conn = await services.GetRequiredService<ReadSource>().OpenAsync(timeout.Token);
                await using var cmd = new MySqlCommand(OpsSql.CountRewrites, conn);
                var count = Convert.ToDouble(await cmd.ExecuteScalarAsync(timeout.Token), System.Globalization.CultureInfo.InvariantCulture);
                OrderingRewrites.IncTo(count);
                last = Stopwatch.GetTimestamp();
            }
            catch (Exception ex) when (ex is MySqlException or OperationCanceledException or ObjectDisposedException or InvalidOperationException)
            {
                // Keep the last value: a metrics scrape must not fail because the database is unreachable.
            }
            finally
            {
                gate.Release();
            }
        });
    }
}
