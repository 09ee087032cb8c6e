-- Indexes on map keys: one index per configured key, named col[key].
CREATE DATABASE IF NOT EXISTS web;
DROP TABLE IF EXISTS web.visits;  -- reruns start fresh
CREATE TABLE web.visits (id BIGINT, attrs MAP<STRING, STRING>) WITH (
  'file-index.bitmap.columns' = 'attrs[device]',
  'file-index.bloom-filter.columns' = 'attrs[campaign]',
  'file-index.bloom-filter.attrs.items' = '100'
);
INSERT INTO web.visits SELECT /*+ REPARTITION(1) */ * FROM VALUES
  (1, map('device', 'ios', 'campaign', 'spring')), (2, map('device', 'web'));
INSERT INTO web.visits SELECT /*+ REPARTITION(1) */ * FROM VALUES
  (3, map('device', 'tv', 'campaign', 'summer')), (4, map('device', 'tv'));

SELECT id FROM web.visits WHERE attrs['device'] = 'tv' ORDER BY id;
EXPLAIN PRUNING SELECT * FROM web.visits WHERE attrs['campaign'] = 'spring';
