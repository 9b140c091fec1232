-- The ordering's current band (docs/DESIGN.md, "Bands"). Every lane's stored value is band * 2^42 + its value, so each
-- rewrite, which writes band + 1, puts its uncommitted index entries after every committed one instead of at the head
-- of the claim walk. Only a rewrite changes the band (under the 'rewrite' row lock of scheduler_state); writers read it
-- with plain consistent reads and never wait for it. Lanes that existed before this migration are in band 0.
CREATE TABLE ordering_band (
  id   TINYINT NOT NULL,
  band INT     NOT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB;

INSERT INTO ordering_band (id, band) VALUES (1, 0);
