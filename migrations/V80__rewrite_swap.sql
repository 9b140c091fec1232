-- The swap rewrite (docs/DESIGN.md, "The swap rewrite"): while it copies the ordering into ordering_next, triggers on
-- ordering note here the key of every lane written meanwhile, so the copy can take those lanes again as they stand.
-- ordering_next itself is made at each rewrite as CREATE TABLE ... LIKE ordering, so it always has ordering's
-- definition and a migration of ordering never has to remember it.
CREATE TABLE ordering_touched (
  job_id BIGINT      NOT NULL,
  task   VARCHAR(32) CHARACTER SET ascii NOT NULL,
  PRIMARY KEY (job_id, task)
) ENGINE=InnoDB;
