-- The job a keyed POST /jobs made, written in the job's own transaction (docs/DESIGN.md "Writes whose outcome is not
-- known yet"): a key left "running" by a request that never answered (its Api killed, its COMMIT's answer lost) is
-- then answered with that job, at once and after the takeover time, instead of 409 for ten minutes and a second job.
ALTER TABLE idempotency ADD COLUMN job_id BIGINT NULL AFTER state;
