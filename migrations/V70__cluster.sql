-- Several processes of each service on one database (docs/DESIGN.md "Scaling out").
-- cluster_nodes: each Api process's heartbeat, stamped with the database's clock; the live ones (seen within
--                Cluster:NodeTimeoutSeconds) share each tenant's rate limit. Read by primary key and one range on seen_at.
--                MEMORY, not InnoDB: a heartbeat needs no durability (a restarted database is refilled within one
--                interval), and an InnoDB commit every 2 s per process was a redo-log flush that showed up in other
--                requests' p99 (RateLimitIsolationTests failed 3 runs in 6 with it, 0 in 3 without).
CREATE TABLE cluster_nodes (
  node_id    VARCHAR(64)  NOT NULL,
  kind       VARCHAR(20)  NOT NULL,
  started_at DATETIME(6)  NOT NULL,
  seen_at    DATETIME(6)  NOT NULL,
  PRIMARY KEY (node_id) USING BTREE,
  KEY ix_cluster_nodes_kind_seen (kind, seen_at) USING BTREE
) ENGINE=MEMORY DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The Admin's ASP.NET Core data-protection key ring, shared by every Admin process so a login cookie or an antiforgery
-- token made by one is read by all. Rows are only added (the key manager never updates or deletes one).
CREATE TABLE data_protection_keys (
  id            BIGINT       NOT NULL AUTO_INCREMENT,
  friendly_name VARCHAR(200) NOT NULL,
  xml           MEDIUMTEXT   NOT NULL,
  created_at    DATETIME(6)  NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY ux_data_protection_keys_name (friendly_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
