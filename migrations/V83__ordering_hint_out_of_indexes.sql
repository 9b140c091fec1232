-- The lane hint (available_at) leaves the ordering's secondary indexes (docs/DESIGN.md "Lane hints off the indexes").
-- Every claim that empties a lane writes its hint, and with the hint in all five secondary indexes that one write was
-- five index entries delete-marked, five inserted and five purged later: the costliest statement of a drain of
-- one-item jobs. Out of the indexes it is an in-place write of the row. A walk now reads a hinted lane's row to see its
-- hint; walks read the rows of the lanes they return anyway (tenant, mode), so only lanes whose every item is out or
-- backing off cost a read more, and those are bounded by the leases out, not by the depth of the queue.
ALTER TABLE ordering
  DROP KEY ix_ordering_task, ADD KEY ix_ordering_task (blocked, task, value, job_id),
  DROP KEY ix_ordering_any, ADD KEY ix_ordering_any (blocked, value, job_id, task),
  DROP KEY ix_ordering_tenant, ADD KEY ix_ordering_tenant (blocked, tenant_id, value, job_id, task),
  DROP KEY ix_ordering_task_tenant, ADD KEY ix_ordering_task_tenant (blocked, task, tenant_id, value, job_id),
  DROP KEY ix_ordering_mode, ADD KEY ix_ordering_mode (blocked, mode, value, job_id, task);
