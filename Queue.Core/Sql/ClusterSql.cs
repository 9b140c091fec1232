namespace Queue.Core.Sql;

/// <summary>Several processes on one database: the database's clock, node heartbeats, the shared key ring (V70).</summary>
public static class ClusterSql
{
    /// <summary>The database's clock; every process takes lease times from it (<see cref="Cluster.DatabaseClock"/>).</summary>
    public const string Now = "SELECT UTC_TIMESTAMP(6)";

    /// <summary>
    /// A node's heartbeat (primary key), stamped with the database's clock, and the live nodes of its kind
    /// (ix_cluster_nodes_kind_seen: one range), in one round trip.
    /// </summary>
    public const string HeartbeatAndCount = """
        INSERT INTO cluster_nodes (node_id, kind, started_at, seen_at) VALUES (@Node, @Kind, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
        ON DUPLICATE KEY UPDATE seen_at = UTC_TIMESTAMP(6);
        SELECT COUNT(*) FROM cluster_nodes WHERE kind = @Kind AND seen_at >= UTC_TIMESTAMP(6) - INTERVAL @Seconds SECOND
        """;

    /// <summary>A stopping node leaves at once instead of after the timeout (primary key).</summary>
    public const string Leave = "DELETE FROM cluster_nodes WHERE node_id = @Node";

    /// <summary>Nodes gone for an hour (ix_cluster_nodes_kind_seen).</summary>
    public const string ForgetGone = "DELETE FROM cluster_nodes WHERE kind = @Kind AND seen_at < UTC_TIMESTAMP(6) - INTERVAL 1 HOUR";

    /// <summary>The replica's state; Seconds_Behind_Master is its lag (NULL when it is not replicating).</summary>
    public const string ReplicaStatus = "SHOW SLAVE STATUS";

    /// <summary>The whole key ring (a few rows: one key per 90 days).</summary>
    public const string AllKeys = "SELECT xml FROM data_protection_keys ORDER BY id";

    /// <summary>A new key; a name stored twice (two Admins rotating at once) keeps the first.</summary>
    public const string StoreKey = """
        INSERT IGNORE INTO data_protection_keys (friendly_name, xml, created_at) VALUES (@Name, @Xml, UTC_TIMESTAMP(6))
        """;
}
