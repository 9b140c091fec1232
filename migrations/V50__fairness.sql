-- Tenant-fair claims (docs/DESIGN.md "Fairness"). Both keep the claim's cost to the number of active tenants, never jobs or items:
--   ix_ordering_task_tenant: the tenants with lanes of one task (a loose index scan) and each one's head lane for that
--                            task, in seed order, for workers that filter on tasks (ix_ordering_tenant serves the rest);
--   ix_ordering_mode:        the override lanes, which are served before any tenant choice, in override order.
ALTER TABLE ordering
  ADD KEY ix_ordering_task_tenant (blocked, task, tenant_id, value, job_id, available_at),
  ADD KEY ix_ordering_mode (blocked, mode, value, job_id, task, available_at);

-- The fairness metrics each Api process computed from its own claims (docs/DESIGN.md "Fairness"), rewritten every
-- minute as one JSON row per process, so the Admin dashboard can show them without reaching into the Api.
CREATE TABLE fairness_reports (
  instance VARCHAR(200) NOT NULL,
  at       DATETIME(6)  NOT NULL,
  report   MEDIUMTEXT   NOT NULL,
  PRIMARY KEY (instance),
  KEY ix_fairness_reports_at (at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
