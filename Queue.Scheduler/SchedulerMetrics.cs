using System.Diagnostics.Metrics;
using Prometheus;
using Queue.Core.Ordering;
using Queue.Core.Telemetry;

namespace Queue.Scheduler;

/// <summary>
/// The Scheduler's Prometheus instruments. Counts are this process's own: in a cluster each rewrite is counted by the
/// node that ran it (the Api's queue_ordering_rewrites_total reads the cluster-wide count from rewrite_log).
/// </summary>
public static class SchedulerMetrics
{
    public static readonly Counter Rewrites = Metrics.CreateCounter("queue_ordering_rewrites_total",
        "Ordering rewrites this Scheduler process completed.");

    public static readonly Counter RewritesSkipped = Metrics.CreateCounter("queue_ordering_rewrites_skipped_total",
        "Rewrite firings that found their period already rewritten (restart, recovery) and changed nothing.");

    public static readonly Counter RewriteFailures = Metrics.CreateCounter("queue_ordering_rewrite_failures_total",
        "Rewrites that failed and were rolled back.");

    public static readonly Counter RewritesInPlace = Metrics.CreateCounter("queue_ordering_rewrites_in_place_total",
        "Rewrites written in place: Ordering:RewriteMethod=in-place, or a swap whose new table counted short three times (event 4007).");

    public static readonly Histogram RewriteDuration = Metrics.CreateHistogram("queue_ordering_rewrite_duration_seconds",
        "Duration of completed ordering rewrites.",
        new HistogramConfiguration { Buckets = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30] });

    public static readonly Gauge JobsRanked = Metrics.CreateGauge("queue_ordering_jobs_ranked",
        "Jobs given a value by the last rewrite this process ran.");

    public static readonly Gauge LastRewrite = Metrics.CreateGauge("queue_ordering_last_rewrite_timestamp_seconds",
        "Unix time of the last rewrite this process completed.");

    public static readonly Gauge Mode = Metrics.CreateGauge("queue_ordering_mode",
        "1 for the ordering mode in force now (from Ordering:Period and Ordering:TimeZone), 0 for the other.",
        new GaugeConfiguration { LabelNames = ["mode"] });

    public static readonly Counter OverridesExpired = Metrics.CreateCounter("queue_ordering_overrides_expired_total",
        "Expired overrides switched off by the override sweep.");

    public static readonly Counter RetentionItems = Metrics.CreateCounter("queue_retention_items_deleted_total",
        "Items of long-finished jobs deleted by retention.");

    public static readonly Counter RetentionDocuments = Metrics.CreateCounter("queue_retention_documents_deleted_total",
        "Documents of long-finished jobs deleted by retention.");

    public static readonly Counter IdempotencyDeleted = Metrics.CreateCounter("queue_idempotency_deleted_total",
        "Expired idempotency records deleted.");

    public static readonly Counter Snapshots = Metrics.CreateCounter("queue_snapshots_total",
        "Minute snapshots recorded by this process.");

    /// <summary>The duration histogram on the "Queue" meter: a histogram cannot be read back, so it is recorded beside the Prometheus one.</summary>
    private static readonly Histogram<double> RewriteSeconds = QueueTracing.Meter.CreateHistogram<double>(RewriteDuration.Name, unit: "s",
        description: RewriteDuration.Help, advice: new InstrumentAdvice<double> { HistogramBucketBoundaries = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30] });

    private static int mirrored;

    private static readonly string[] ModeNames = ["smallest", "oldest"];

    public static void Observe(RewriteResult result)
    {
        if (result.Skipped)
        {
            RewritesSkipped.Inc();
            return;
        }
        Rewrites.Inc();
        if (result.Method == OrderingOptions.InPlace)
        {
            RewritesInPlace.Inc();
        }
        RewriteDuration.Observe(result.Duration.TotalSeconds);
        RewriteSeconds.Record(result.Duration.TotalSeconds);
        JobsRanked.Set(result.JobsRanked);
        OverridesExpired.Inc(result.OverridesExpired);
        LastRewrite.SetToCurrentTimeUtc();
    }

    /// <summary>Makes every series exist from the first scrape, and keeps the mode gauge current at each scrape.</summary>
    public static void Initialise(OrderingCalendar calendar)
    {
        Rewrites.Inc(0);
        RewritesSkipped.Inc(0);
        RewriteFailures.Inc(0);
        RewritesInPlace.Inc(0);
        OverridesExpired.Inc(0);
        RetentionItems.Inc(0);
        RetentionDocuments.Inc(0);
        IdempotencyDeleted.Inc(0);
        Snapshots.Inc(0);
        Metrics.DefaultRegistry.AddBeforeCollectCallback(() => SetMode(calendar));
        Mirror(calendar);
    }

    private static void SetMode(OrderingCalendar calendar)
    {
        var current = calendar.Current.Mode;
        Mode.WithLabels("smallest").Set(current == OrderingMode.Smallest ? 1 : 0);
        Mode.WithLabels("oldest").Set(current == OrderingMode.Oldest ? 1 : 0);
    }

    /// <summary>
    /// What /metrics shows, also on the "Queue" meter under the same names, read from the Prometheus instruments when
    /// a collector collects (docs/DESIGN.md "Tracing and metrics"). Once per process, as the Prometheus instruments are.
    /// </summary>
    private static void Mirror(OrderingCalendar calendar)
    {
        if (Interlocked.Exchange(ref mirrored, 1) == 1)
        {
            return;
        }
        var meter = QueueTracing.Meter;
        foreach (var c in new[] { Rewrites, RewritesSkipped, RewriteFailures, OverridesExpired, RetentionItems, RetentionDocuments, IdempotencyDeleted, Snapshots })
        {
            meter.CreateObservableCounter(c.Name, () => c.Value, description: c.Help);
        }
        foreach (var g in new[] { JobsRanked, LastRewrite })
        {
            meter.CreateObservableGauge(g.Name, () => g.Value, description: g.Help);
        }
        meter.CreateObservableGauge(Mode.Name, () =>
        {
            SetMode(calendar);
            return ModeNames.Select(m => new Measurement<double>(Mode.WithLabels(m).Value, new KeyValuePair<string, object?>("mode", m)));
        }, description: Mode.Help);
    }
}
