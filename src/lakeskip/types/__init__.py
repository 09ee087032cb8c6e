"""lakeskip's data types: what a column holds, and how that maps to Paimon, Arrow and Spark.

A :class:`DataType` is a small frozen value. Three spellings meet here:

* Paimon's type strings as stored in ``schema/schema-N`` (``"BIGINT"``, ``"STRING"``,
  ``"DECIMAL(10, 2)"``, ``"TIMESTAMP(6) WITH LOCAL TIME ZONE"``; maps and arrays as JSON
  objects) -- :meth:`DataType.to_paimon_json` / :func:`parse_paimon_json`;
* Spark SQL DDL (``BIGINT``, ``STRING``, ``TIMESTAMP`` = with local time zone,
  ``TIMESTAMP_NTZ``, ``MAP<STRING, INT>``) -- :meth:`DataType.spark_ddl` / :func:`parse_sql_type`;
* Arrow -- :meth:`DataType.to_arrow` / :func:`from_arrow`.

Values have one *internal* (physical) form per type, the one Paimon's Java code hashes and
compares: integers as ``int``; FLOAT/DOUBLE as ``float``; DECIMAL as :class:`decimal.Decimal`;
strings as ``str``; binary as ``bytes``; DATE as epoch days (``int``); TIMESTAMP as ``int``
millis when precision <= 3, else micros. :func:`to_internal` converts a Python literal.

Example:
    >>> parse_sql_type("decimal(10,2)").to_paimon_json()
    'DECIMAL(10, 2)'
    >>> parse_sql_type("timestamp").to_paimon_json()
    'TIMESTAMP(6) WITH LOCAL TIME ZONE'
    >>> import datetime
    >>> to_internal(DATE, datetime.date(1970, 1, 2))
    1

The package: the type model in :mod:`~lakeskip.types.data_type`, a table's columns in
:mod:`~lakeskip.types.row_type`, the spellings in by :mod:`~lakeskip.types.type_parser`, values
and time zones in :mod:`~lakeskip.types.values`; this module only re-exports them.
"""

from __future__ import annotations

from lakeskip.types.data_type import (
    BIGINT,
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    INT_RANGES,
    MAX_VARCHAR,
    SMALLINT,
    STRING,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    TINYINT,
    DataType,
    Field,
    TypeRoot,
    array_of,
    assign_field_ids,
    decimal_type,
    field_ids,
    map_of,
    quote_identifier,
    quote_sql_string,
    row_of,
    split_identifier,
)
from lakeskip.types.row_type import RowType
from lakeskip.types.type_parser import (
    from_arrow,
    from_spark_json,
    parse_paimon_field,
    parse_paimon_json,
    parse_sql_type,
)
from lakeskip.types.values import (
    EPOCH_DATE,
    EPOCH_NAIVE,
    EPOCH_UTC,
    from_internal,
    session_time_zone,
    to_internal,
)

__all__ = [
    "BIGINT",
    "BINARY",
    "BOOLEAN",
    "DATE",
    "DOUBLE",
    "EPOCH_DATE",
    "EPOCH_NAIVE",
    "EPOCH_UTC",
    "FLOAT",
    "INT",
    "INT_RANGES",
    "MAX_VARCHAR",
    "SMALLINT",
    "STRING",
    "TIMESTAMP",
    "TIMESTAMP_LTZ",
    "TINYINT",
    "DataType",
    "Field",
    "RowType",
    "TypeRoot",
    "array_of",
    "assign_field_ids",
    "decimal_type",
    "field_ids",
    "from_arrow",
    "from_internal",
    "from_spark_json",
    "map_of",
    "parse_paimon_field",
    "parse_paimon_json",
    "parse_sql_type",
    "quote_identifier",
    "quote_sql_string",
    "row_of",
    "session_time_zone",
    "split_identifier",
    "to_internal",
]
