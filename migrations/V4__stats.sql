-- Cumulative per-tenant claim and completion counts. Api processes count in memory and add their deltas here every
-- few seconds, so the hot claim path never updates a shared row; the Scheduler's minute snapshot reads the totals.
CREATE TABLE tenant_counters (
  tenant_id   BIGINT      NOT NULL,
  claims      BIGINT      NOT NULL DEFAULT 0,
  completions BIGINT      NOT NULL DEFAULT 0,
  updated_at  DATETIME(6) NOT NULL,
  PRIMARY KEY (tenant_id)
) ENGINE=InnoDB;

-- One row per tenant per minute, written by the Scheduler: depth by state, and claims/completions in that minute.
CREATE TABLE snapshots (
  at          DATETIME    NOT NULL,
  tenant_id   BIGINT      NOT NULL,
  ready       BIGINT      NOT NULL,
  leased      BIGINT      NOT NULL,
  done        BIGINT      NOT NULL,
  dead        BIGINT      NOT NULL,
  cancelled   BIGINT      NOT NULL,
  claims      BIGINT      NOT NULL,
  completions BIGINT      NOT NULL,
  PRIMARY KEY (at, tenant_id)
) ENGINE=InnoDB;
