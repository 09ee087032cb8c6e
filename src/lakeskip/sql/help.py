"""The ``HELP`` table: what the shell understands, one row per form, with an example of each
statement type the row covers.

The examples tie the three places a statement lives: the parser
(:mod:`lakeskip.sql.statements`, which must turn each example into its statement type), the
handlers (``lakeskip.spark.front.statements.HANDLERS``, one per type) and this table (every
statement type has a row); ``tests/unit/spark/front/test_statement_routing.py`` checks all three.

Example:
    >>> next(r.syntax for r in HELP if "CALL sys.rollback" in r.syntax)
    "CALL sys.rollback(table => 'd.t', version => 'v1' | '3')"
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HELP", "HelpRow"]


@dataclass(frozen=True, slots=True)
class HelpRow:
    """One row of ``HELP``: the form, what it does, and statements of that form (each parses
    to one statement type; together the rows hold an example of every type)."""

    syntax: str
    description: str
    examples: tuple[str, ...] = ()


HELP: tuple[HelpRow, ...] = (
    HelpRow(
        "SELECT ... FROM t [VERSION|TIMESTAMP AS OF x]",
        "query; lakeskip tables are pruned first",
        ("SELECT * FROM t VERSION AS OF 1",),
    ),
    HelpRow(
        "EXPLAIN [PRUNING] SELECT ...",
        "files kept/skipped per table, and why",
        ("EXPLAIN PRUNING SELECT * FROM t",),
    ),
    HelpRow(
        "CREATE TABLE t (...) [PARTITIONED BY (...)] WITH ('file-index.<type>.columns'=...)",
        "index types: bloom-filter, bitmap, bsi, range-bitmap",
        ("CREATE TABLE t (id BIGINT) WITH ('file-index.bloom-filter.columns'='id')",),
    ),
    HelpRow(
        "INSERT INTO|OVERWRITE t [PARTITION (k=v)] SELECT ...|VALUES ...",
        "append or replace",
        ("INSERT INTO t VALUES (1)",),
    ),
    HelpRow(
        "ALTER TABLE t SET|UNSET TBLPROPERTIES (...)",
        "change options (indexes apply to new files)",
        ("ALTER TABLE t SET TBLPROPERTIES ('k'='v')", "ALTER TABLE t UNSET TBLPROPERTIES ('k')"),
    ),
    HelpRow(
        "ALTER TABLE t ADD COLUMN(S) (c T [FIRST|AFTER b]) | RENAME COLUMN a TO b | DROP "
        "COLUMN c | ALTER COLUMN c TYPE T|COMMENT '..'|DROP NOT NULL|FIRST|AFTER b | RENAME TO u",
        "schema evolution (Paimon's: by field id, widening types only); rename the table",
        (
            "ALTER TABLE t ADD COLUMNS (c STRING)",
            "ALTER TABLE t RENAME COLUMN a TO b",
            "ALTER TABLE t DROP COLUMN c",
            "ALTER TABLE t ALTER COLUMN c TYPE BIGINT",
            "ALTER TABLE t RENAME TO u",
        ),
    ),
    HelpRow(
        "TRUNCATE TABLE t | DROP TABLE [IF EXISTS] t",
        "empty or remove a table",
        ("TRUNCATE TABLE t", "DROP TABLE IF EXISTS t"),
    ),
    HelpRow(
        "DESCRIBE [EXTENDED] t | SHOW CREATE TABLE t | SHOW TABLES | SHOW DATABASES",
        "metadata",
        ("DESCRIBE EXTENDED t", "SHOW CREATE TABLE t", "SHOW TABLES", "SHOW DATABASES"),
    ),
    HelpRow(
        "CREATE|DROP DATABASE [IF [NOT] EXISTS] d | USE d",
        "databases",
        ("CREATE DATABASE IF NOT EXISTS d", "DROP DATABASE IF EXISTS d", "USE d"),
    ),
    HelpRow(
        "CALL sys.rewrite_file_index(table => 'd.t' [, where => '...'])",
        "(re)build indexes",
        ("CALL sys.rewrite_file_index(table => 'd.t')",),
    ),
    HelpRow(
        "CALL sys.compact(table => 'd.t', order_strategy => 'zorder', order_by => 'a,b')",
        "cluster files",
    ),
    HelpRow("CALL sys.expire_snapshots(...) | sys.remove_orphan_files(...)", "maintenance"),
    HelpRow(
        "CALL sys.create_tag(table => 'd.t', tag => 'v1' [, snapshot => n])", "name a snapshot"
    ),
    HelpRow(
        "CALL sys.rollback(table => 'd.t', version => 'v1' | '3')", "restore as a new snapshot"
    ),
    HelpRow(
        "DELETE FROM t [WHERE cond]",
        "copy-on-write: rewrites only files holding matching rows",
        ("DELETE FROM t WHERE id = 1",),
    ),
    HelpRow(
        "UPDATE t SET c = expr, ... [WHERE cond]",
        "copy-on-write, like DELETE",
        ("UPDATE t SET c = 'x' WHERE id = 1",),
    ),
    HelpRow(
        "MERGE INTO t USING s ON ... WHEN [NOT] MATCHED [AND c] THEN UPDATE|DELETE|INSERT",
        "copy-on-write: rewrites only files holding matched rows",
        ("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE",),
    ),
    HelpRow("HELP", "this list", ("HELP",)),
    HelpRow(
        "anything else",
        "runs in Spark unchanged",
        # a form of a statement above that lakeskip does not implement: Spark's on a Spark
        # table, a one-line error on a lakeskip table
        ("SET spark.sql.shuffle.partitions = 2", "ALTER TABLE t ALTER COLUMN c SET DEFAULT 1"),
    ),
)
