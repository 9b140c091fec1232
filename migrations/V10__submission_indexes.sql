-- GET /jobs pages a tenant's jobs newest first (optionally of one state) straight from an index, never sorting them.
CREATE INDEX ix_jobs_tenant_created ON jobs (tenant_id, created_at, id);
CREATE INDEX ix_jobs_tenant_state_created ON jobs (tenant_id, state, created_at, id);

-- GET /jobs/{id}/items?state= pages one job's items of one state in id order without sorting the job's items
-- (the "last errors" listing of a finished 10M-item job must not sort 10M rows).
CREATE INDEX ix_items_job_list ON items (job_id, state, id);
