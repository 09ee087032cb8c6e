-- Quickstart: a table with file indexes, a few inserts, and queries that skip files.
CREATE DATABASE IF NOT EXISTS shop;
USE shop;

DROP TABLE IF EXISTS orders;  -- reruns start fresh
CREATE TABLE orders (
  id BIGINT,
  user_id STRING,
  status STRING,
  price BIGINT,
  ts TIMESTAMP
) WITH (
  'file-index.bloom-filter.columns' = 'user_id',
  'file-index.bloom-filter.user_id.items' = '1000',
  'file-index.bitmap.columns' = 'status',
  'file-index.bsi.columns' = 'price'
);

INSERT INTO orders SELECT /*+ REPARTITION(1) */ * FROM VALUES
  (1, 'u1', 'NEW', 120, TIMESTAMP '2024-01-01 10:00:00'),
  (2, 'u2', 'PAID', 80, TIMESTAMP '2024-01-01 11:00:00');
INSERT INTO orders SELECT /*+ REPARTITION(1) */ * FROM VALUES
  (3, 'u3', 'PAID', 999, TIMESTAMP '2024-01-02 09:00:00'),
  (4, 'u4', 'REFUND', 15, TIMESTAMP '2024-01-02 12:00:00');

SELECT * FROM orders WHERE user_id = 'u3';
SELECT count(*) AS refunds FROM orders WHERE status = 'REFUND';
SELECT id, price FROM orders WHERE price BETWEEN 100 AND 200 ORDER BY id;
EXPLAIN PRUNING SELECT * FROM orders WHERE user_id = 'u3';
DESCRIBE EXTENDED orders;
