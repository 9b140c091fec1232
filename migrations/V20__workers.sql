-- Workers as the claim path sees them: one row per worker name (the `worker` field of POST /next). Api processes keep
-- these counts in memory and add their deltas every few seconds, so the hot claim path never writes this table.
-- Live leases per worker are not kept here (they would be wrong the moment another process completes one): read them
-- from items (ClaimSql.LeasesByWorker), whose cost is bounded by the open jobs and the leases out.
CREATE TABLE workers (
  name          VARCHAR(200) NOT NULL,
  first_seen_at DATETIME(6)  NOT NULL,
  last_seen_at  DATETIME(6)  NOT NULL,
  claims        BIGINT       NOT NULL DEFAULT 0,
  completions   BIGINT       NOT NULL DEFAULT 0,
  failures      BIGINT       NOT NULL DEFAULT 0,
  PRIMARY KEY (name),
  KEY ix_workers_seen (last_seen_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
