-- The documents a keyed upload made (the first one's id and how many), written in the upload's own transaction, as
-- V81 does for jobs: a retry of an upload whose request never answered is answered with them, never stored again.
-- One upload's documents are consecutive among its job's: uploads to a job hold the job's row lock.
ALTER TABLE idempotency ADD COLUMN document_id BIGINT NULL AFTER job_id, ADD COLUMN documents INT NULL AFTER document_id;
