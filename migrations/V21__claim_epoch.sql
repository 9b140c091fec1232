-- One counter that every change able to take back a claimed-ahead item moves, in the change's own transaction: a
-- cancel, a block, an override (set, cleared, expired), a requeue. An Api process reads it (one primary-key read,
-- shared by the /next calls that arrive meanwhile) before it answers from its claim-ahead buffer, and throws away what
-- it buffered under an older value: a cancelled job's items are never handed out after the cancel commits, and an
-- override wins the next claim (docs/DESIGN.md "Claim-ahead that keeps the policy").
CREATE TABLE claim_epoch (
  id    TINYINT NOT NULL,
  epoch BIGINT  NOT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB;

INSERT INTO claim_epoch (id, epoch) VALUES (1, 0);
