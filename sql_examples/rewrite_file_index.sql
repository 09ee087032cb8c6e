-- Add indexes to a table that has data already: change the options, then rewrite the
-- indexes of every existing file (data files are not rewritten).
CREATE DATABASE IF NOT EXISTS logs;
DROP TABLE IF EXISTS logs.events;  -- reruns start fresh
CREATE TABLE logs.events (id BIGINT, host STRING, level STRING);

INSERT INTO logs.events SELECT /*+ REPARTITION(1) */ * FROM VALUES (1, 'web-1', 'INFO'), (2, 'web-2', 'WARN');
INSERT INTO logs.events SELECT /*+ REPARTITION(1) */ * FROM VALUES (3, 'db-1', 'ERROR'), (4, 'db-2', 'INFO');

ALTER TABLE logs.events SET (
  'file-index.bloom-filter.columns' = 'host',
  'file-index.bloom-filter.host.items' = '100',
  'file-index.bitmap.columns' = 'level'
);
CALL sys.rewrite_file_index(table => 'logs.events');
-- a second call finds every file current and commits nothing
CALL sys.rewrite_file_index('logs.events');

EXPLAIN PRUNING SELECT * FROM logs.events WHERE level = 'ERROR';
SELECT * FROM logs.events WHERE host = 'db-1';
