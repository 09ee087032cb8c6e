-- Sort compaction: cluster rows on two columns so range predicates on either skip files.
CREATE DATABASE IF NOT EXISTS geo;
DROP TABLE IF EXISTS geo.points;  -- reruns start fresh
CREATE TABLE geo.points (id BIGINT, x BIGINT, y BIGINT) WITH ('target-file-size' = '2 kb');

INSERT INTO geo.points SELECT /*+ REPARTITION(4) */ id, (id * 7919) % 1000 AS x, (id * 104729) % 1000 AS y
FROM range(0, 4000);

EXPLAIN PRUNING SELECT * FROM geo.points WHERE x < 50;
CALL sys.compact(table => 'geo.points', order_strategy => 'zorder', order_by => 'x,y');
EXPLAIN PRUNING SELECT * FROM geo.points WHERE x < 50;
EXPLAIN PRUNING SELECT * FROM geo.points WHERE y BETWEEN 500 AND 520;
SELECT count(*) FROM geo.points WHERE x < 50;
