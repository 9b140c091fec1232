-- State the Scheduler's jobs keep between runs.
--   'rewrite':   the row every ordering rewrite locks first, so rewrites are serialised even outside Quartz
--                (the benchmark, a second cluster, a manual run) and a period's rerun sees the first one's log row.
--   'retention': cursor_at/cursor_id are the (finished_at, id) of the last job whose documents were purged.
CREATE TABLE scheduler_state (
  name       VARCHAR(64) CHARACTER SET ascii NOT NULL,
  cursor_at  DATETIME(6) NULL,
  cursor_id  BIGINT      NULL,
  updated_at DATETIME(6) NOT NULL,
  PRIMARY KEY (name)
) ENGINE=InnoDB;

INSERT INTO scheduler_state (name, updated_at) VALUES ('rewrite', '2000-01-01'), ('retention', '2000-01-01');

-- The cumulative tenant_counters values the last snapshot saw, so each snapshot stores only its minute's delta
-- (and the snapshots of a tenant add up to its counters).
CREATE TABLE snapshot_state (
  tenant_id   BIGINT      NOT NULL,
  claims      BIGINT      NOT NULL,
  completions BIGINT      NOT NULL,
  at          DATETIME    NOT NULL,
  PRIMARY KEY (tenant_id)
) ENGINE=InnoDB;
