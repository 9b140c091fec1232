-- Jobs, documents, items and the ordering. States are small integers so claim rows and indexes stay narrow:
--   jobs.state:  0 open, 1 closed, 2 done, 3 cancelled
--   items.state: 0 ready, 1 leased, 2 done, 3 dead, 4 cancelled
CREATE TABLE jobs (
  id              BIGINT       NOT NULL AUTO_INCREMENT,
  tenant_id       BIGINT       NOT NULL,
  name            VARCHAR(200) NOT NULL,
  state           TINYINT      NOT NULL DEFAULT 0,
  tasks           VARCHAR(200) CHARACTER SET ascii NOT NULL,   -- comma-separated task names, fixed at creation
  blocked         TINYINT      NOT NULL DEFAULT 0,
  -- Counters kept in the same transactions as the item changes, so status reads never scan items.
  -- ready and leased are derived: active = total - done - dead - cancelled, and live leases are counted by index.
  documents       INT          NOT NULL DEFAULT 0,
  items_total     BIGINT       NOT NULL DEFAULT 0,
  items_done      BIGINT       NOT NULL DEFAULT 0,
  items_dead      BIGINT       NOT NULL DEFAULT 0,
  items_cancelled BIGINT       NOT NULL DEFAULT 0,
  created_at      DATETIME(6)  NOT NULL,
  closed_at       DATETIME(6)  NULL,
  finished_at     DATETIME(6)  NULL,
  updated_at      DATETIME(6)  NOT NULL,
  PRIMARY KEY (id),
  KEY ix_jobs_tenant (tenant_id, id),
  KEY ix_jobs_tenant_state (tenant_id, state, id),
  KEY ix_jobs_state_finished (state, finished_at),
  CONSTRAINT fk_jobs_tenant FOREIGN KEY (tenant_id) REFERENCES tenants (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE documents (
  id           BIGINT       NOT NULL AUTO_INCREMENT,
  job_id       BIGINT       NOT NULL,
  tenant_id    BIGINT       NOT NULL,
  name         VARCHAR(255) NOT NULL,
  content_type VARCHAR(255) NOT NULL,
  size         BIGINT       NOT NULL,
  sha256       BINARY(32)   NOT NULL,
  created_at   DATETIME(6)  NOT NULL,
  PRIMARY KEY (id),
  KEY ix_documents_job (job_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- The bytes live apart from the metadata so that claim and listing rows stay small.
CREATE TABLE document_content (
  document_id BIGINT   NOT NULL,
  content     LONGBLOB NOT NULL,
  PRIMARY KEY (document_id)
) ENGINE=InnoDB;

CREATE TABLE items (
  id               BIGINT      NOT NULL AUTO_INCREMENT,
  job_id           BIGINT      NOT NULL,
  document_id      BIGINT      NOT NULL,
  task             VARCHAR(32) CHARACTER SET ascii NOT NULL,
  state            TINYINT     NOT NULL DEFAULT 0,
  -- 1 while the item can still be handed out (ready or leased); kept by the server so the claim index stays exact.
  active           TINYINT AS (IF(state < 2, 1, 0)) PERSISTENT,
  attempts         INT         NOT NULL DEFAULT 0,
  lease_token      BINARY(16)  NULL,
  lease_expires_at DATETIME(6) NULL,
  worker           VARCHAR(200) NULL,
  last_error       TEXT        NULL,
  -- When the item may next be claimed: the backoff's due time while ready, the lease expiry while leased.
  -- One column for both lets one index range find ready items and expired leases alike.
  due_at           DATETIME(6) NOT NULL,
  created_at       DATETIME(6) NOT NULL,
  updated_at       DATETIME(6) NOT NULL,
  PRIMARY KEY (id),
  -- The claim: one (job, task) lane, lowest id first. due_at rides along so index condition pushdown
  -- rejects not-yet-due rows without reading or locking them.
  KEY ix_items_claim (job_id, task, active, id, due_at),
  -- Status reads count live leases per job without touching ready items.
  KEY ix_items_job_state (job_id, state, due_at),
  KEY ix_items_document (document_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Every failed attempt, so a dead item keeps its whole error history.
CREATE TABLE item_errors (
  id       BIGINT      NOT NULL AUTO_INCREMENT,
  item_id  BIGINT      NOT NULL,
  attempt  INT         NOT NULL,
  error    TEXT        NOT NULL,
  at       DATETIME(6) NOT NULL,
  PRIMARY KEY (id),
  KEY ix_item_errors_item (item_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- The ordering: one row per (job, task) lane that still has active items. Every lane of a job carries the job's value.
-- Lanes, not jobs, so that a worker asking for one task never walks jobs that have no work of that task.
-- A lane leaves the table once it has no active item, so jobs that ran dry cost claims nothing.
CREATE TABLE ordering (
  job_id       BIGINT      NOT NULL,
  task         VARCHAR(32) CHARACTER SET ascii NOT NULL,
  tenant_id    BIGINT      NOT NULL,
  value        BIGINT      NOT NULL,
  mode         VARCHAR(16) CHARACTER SET ascii NOT NULL,    -- smallest | oldest | override
  blocked      TINYINT     NOT NULL DEFAULT 0,              -- copy of jobs.blocked, so claims filter inside the index
  -- Hint: no item in this lane can be claimed before this time (all leased or backing off). Claimers skip such
  -- lanes inside the index instead of probing items; any change that can make an item claimable lowers it.
  available_at DATETIME(6) NOT NULL,
  updated_at   DATETIME(6) NOT NULL,
  PRIMARY KEY (job_id, task),
  KEY ix_ordering_task (blocked, task, value, job_id, available_at),
  KEY ix_ordering_any (blocked, value, job_id, task, available_at),
  KEY ix_ordering_tenant (blocked, tenant_id, value, job_id, task, available_at)
) ENGINE=InnoDB;

CREATE TABLE overrides (
  id            BIGINT       NOT NULL AUTO_INCREMENT,
  job_id        BIGINT       NOT NULL,
  priority      BIGINT       NOT NULL,
  active        TINYINT      NOT NULL DEFAULT 1,
  reason        VARCHAR(500) NOT NULL,
  technician_id BIGINT       NOT NULL,
  expires_at    DATETIME(6)  NOT NULL,
  created_at    DATETIME(6)  NOT NULL,
  updated_at    DATETIME(6)  NOT NULL,
  PRIMARY KEY (id),
  KEY ix_overrides_job (job_id, active),
  KEY ix_overrides_active (active, expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE audit_log (
  id          BIGINT       NOT NULL AUTO_INCREMENT,
  at          DATETIME(6)  NOT NULL,
  actor       VARCHAR(100) NOT NULL,      -- technician login, or 'scheduler'
  action      VARCHAR(64)  NOT NULL,
  job_id      BIGINT       NULL,
  tenant_id   BIGINT       NULL,
  reason      VARCHAR(500) NULL,
  before_json TEXT         NULL,
  after_json  TEXT         NULL,
  PRIMARY KEY (id),
  KEY ix_audit_job (job_id, id),
  KEY ix_audit_at (at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE idempotency (
  tenant_id    BIGINT       NOT NULL,
  idem_key     VARCHAR(255) NOT NULL,
  method       VARCHAR(10)  CHARACTER SET ascii NOT NULL,
  path         VARCHAR(400) NOT NULL,
  request_hash BINARY(32)   NOT NULL,      -- SHA-256 of method, path and body bytes
  state        TINYINT      NOT NULL,      -- 0 running, 1 completed
  status_code  INT          NULL,
  location     VARCHAR(400) NULL,
  response     MEDIUMBLOB   NULL,
  created_at   DATETIME(6)  NOT NULL,
  expires_at   DATETIME(6)  NOT NULL,
  PRIMARY KEY (tenant_id, idem_key),
  KEY ix_idempotency_expires (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per completed ordering rewrite; the Api's /metrics reads its count.
CREATE TABLE rewrite_log (
  id          BIGINT      NOT NULL AUTO_INCREMENT,
  period_start DATETIME(6) NOT NULL,
  mode        VARCHAR(16) CHARACTER SET ascii NOT NULL,
  jobs_ranked INT         NOT NULL,
  duration_ms INT         NOT NULL,
  started_at  DATETIME(6) NOT NULL,
  finished_at DATETIME(6) NOT NULL,
  instance    VARCHAR(200) NOT NULL,
  PRIMARY KEY (id),
  KEY ix_rewrite_period (period_start)
) ENGINE=InnoDB;
