-- DELETE and UPDATE (copy-on-write): only files holding matching rows are rewritten.
CREATE DATABASE IF NOT EXISTS shop;
USE shop;

DROP TABLE IF EXISTS tickets;  -- reruns start fresh
CREATE TABLE tickets (
  id BIGINT,
  customer STRING,
  status STRING,
  dt STRING
) PARTITIONED BY (dt) WITH (
  'file-index.bloom-filter.columns' = 'customer',
  'file-index.bitmap.columns' = 'status'
);

INSERT INTO tickets SELECT /*+ REPARTITION(1) */ * FROM VALUES
  (1, 'c1', 'OPEN', '2024-01-01'), (2, 'c2', 'CLOSED', '2024-01-01');
INSERT INTO tickets SELECT /*+ REPARTITION(1) */ * FROM VALUES
  (3, 'c3', 'OPEN', '2024-01-02'), (4, 'c4', 'SPAM', '2024-01-02');
INSERT INTO tickets SELECT /*+ REPARTITION(1) */ * FROM VALUES
  (5, 'c5', 'OPEN', '2024-01-03'), (6, NULL, 'OPEN', '2024-01-03');

-- rewrites one file (stats or the bitmap index skip the two files without SPAM)
DELETE FROM tickets WHERE status = 'SPAM';
-- rewrites one file; the row whose customer is NULL is not updated (NULL = 'c5' is not true)
UPDATE tickets SET status = 'CLOSED' WHERE customer = 'c5' OR customer = 'nobody';
SELECT * FROM tickets ORDER BY id;
-- the snapshot before the DELETE still has the deleted row
SELECT id, status FROM tickets VERSION AS OF 3 WHERE status = 'SPAM';
EXPLAIN PRUNING SELECT * FROM tickets WHERE customer = 'c5';
