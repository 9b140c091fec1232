using Queue.Core.Hosting;

namespace Queue.Core.Cluster;

/// <summary>Settings for several processes on one database (section <c>Cluster</c>; docs/DESIGN.md "Scaling out").</summary>
public sealed class ClusterOptions
{
    /// <summary>How often each process re-measures its offset to the database's clock.</summary>
    public int ClockSyncSeconds { get; set; } = 30;

    /// <summary>How often each Api process writes its heartbeat and counts the live Api processes.</summary>
    public int HeartbeatSeconds { get; set; } = 2;

    /// <summary>A process whose heartbeat is older than this no longer counts as live (its share of the limits returns to the others).</summary>
    public int NodeTimeoutSeconds { get; set; } = 10;
}

public sealed class ClusterOptionsRules() : OptionsRules<ClusterOptions>("Cluster")
{
    protected override IEnumerable<(string Field, bool Holds, string MustBe)> Rules(ClusterOptions o) =>
    [
        (nameof(o.ClockSyncSeconds), o.ClockSyncSeconds is >= 1 and <= 3600, "must be 1 to 3600"),
        (nameof(o.HeartbeatSeconds), o.HeartbeatSeconds is >= 1 and <= 60, "must be 1 to 60"),
        (nameof(o.NodeTimeoutSeconds), o.NodeTimeoutSeconds >= 2 * o.HeartbeatSeconds && o.NodeTimeoutSeconds <= 600,
            "must be at least twice HeartbeatSeconds and at most 600"),
    ];
}
