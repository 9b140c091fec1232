using Queue.Core.Hosting;

namespace Queue.Core.Maintenance;

/// <summary>Section <c>Maintenance</c>: the Scheduler's housekeeping jobs.</summary>
public sealed class MaintenanceOptions
{
    /// <summary>Items, errors and documents of jobs done or cancelled longer ago than this are deleted.</summary>
    public int RetentionDays { get; set; } = 30;

    public TimeSpan RetentionInterval { get; set; } = TimeSpan.FromMinutes(10);

    /// <summary>Items deleted per transaction; small, so no transaction holds locks or undo for long.</summary>
    public int RetentionItemBatch { get; set; } = 1000;

    /// <summary>Documents per transaction; each can carry up to 16 MiB of content.</summary>
    public int RetentionDocumentBatch { get; set; } = 20;

    /// <summary>Pause between retention batches, so purging yields the disk and the buffer pool to claims.</summary>
    public TimeSpan RetentionPause { get; set; } = TimeSpan.FromMilliseconds(20);

    /// <summary>One retention run stops after this long and the next run carries on from its cursor.</summary>
    public TimeSpan RetentionMaxRun { get; set; } = TimeSpan.FromMinutes(5);

    public TimeSpan IdempotencyInterval { get; set; } = TimeSpan.FromMinutes(5);

    /// <summary>How often expired overrides are switched off between rewrites (a rewrite also does it).</summary>
    public TimeSpan OverrideSweepInterval { get; set; } = TimeSpan.FromSeconds(15);
}

public sealed class MaintenanceOptionsRules() : OptionsRules<MaintenanceOptions>("Maintenance")
{
    private static readonly TimeSpan Second = TimeSpan.FromSeconds(1);

    protected override IEnumerable<(string Field, bool Holds, string MustBe)> Rules(MaintenanceOptions o) =>
    [
        (nameof(o.RetentionDays), o.RetentionDays is >= 1 and <= 36500, "must be 1 to 36500"),
        (nameof(o.RetentionItemBatch), o.RetentionItemBatch is >= 1 and <= 100_000, "must be 1 to 100000"),
        (nameof(o.RetentionDocumentBatch), o.RetentionDocumentBatch is >= 1 and <= 10_000, "must be 1 to 10000"),
        (nameof(o.RetentionPause), o.RetentionPause >= TimeSpan.Zero && o.RetentionPause <= TimeSpan.FromSeconds(10), "must be 0 to 10 seconds"),
        (nameof(o.RetentionMaxRun), o.RetentionMaxRun >= Second, "must be at least 1 second"),
        (nameof(o.RetentionInterval), o.RetentionInterval >= Second, "must be at least 1 second"),
        (nameof(o.IdempotencyInterval), o.IdempotencyInterval >= Second, "must be at least 1 second"),
        (nameof(o.OverrideSweepInterval), o.OverrideSweepInterval >= Second, "must be at least 1 second"),
    ];
}
