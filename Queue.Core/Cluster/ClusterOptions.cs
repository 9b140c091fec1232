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

    /// <summary>How often the replica's lag is measured (only with <c>ConnectionStrings:QueueRead</c>).</summary>
    public int ReplicaCheckSeconds { get; set; } = 2;

    /// <summary>Reads that may lag go to the primary while the replica is further behind than this.</summary>
    public int MaxReplicaLagSeconds { get; set; } = 30;
}

public sealed class ClusterOptionsRules() : OptionsRules<ClusterOptions>("Cluster")
{
    protected override IEnumerable<(string Field, bool Holds, string MustBe)> Rules(ClusterOptions o) =>
    [
        (nameof(o.ClockSyncSeconds), o.ClockSyncSeconds is >= 1 and <= 3600, "must be 1 to 3600"),
        (nameof(o.HeartbeatSeconds), o.HeartbeatSeconds is >= 1 and <= 60, "must be 1 to 60"),
        (nameof(o.NodeTimeoutSeconds), o.NodeTimeoutSeconds >= 2 * o.HeartbeatSeconds && o.NodeTimeoutSeconds <= 600,
            "must be at least twice HeartbeatSeconds and at most 600"),
        (nameof(o.ReplicaCheckSeconds), o.ReplicaCheckSeconds is >= 1 and <= 300, "must be 1 to 300"),
        (nameof(o.MaxReplicaLagSeconds), o.MaxReplicaLagSeconds is >= 0 and <= 86_400, "must be 0 to 86400"),
    ];
}
