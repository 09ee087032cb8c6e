"""The ``where => '...'`` argument of procedures: SQL text -> a predicate over partition columns.

Parsing stays in the SQL layer (the only one that imports sqlglot); the procedures bind the
result to the partition row type and evaluate it on the partition values.

>>> from lakeskip import types as T
>>> pt = T.RowType.of(("dt", T.STRING), ("hr", T.INT))
>>> parse_partition_predicate("DT = '2024-01-01' AND hr < 3", pt)
And(EqualTo(Reference('dt'), '2024-01-01'), LessThan(Reference('hr'), 3))
>>> parse_partition_predicate("id = 1", pt)
Traceback (most recent call last):
  ...
lakeskip.errors.InvalidArgumentError: where => 'id = 1': id is not a partition column (partition columns: dt, hr)
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from lakeskip.errors import InvalidArgumentError, SqlParseError
from lakeskip.expressions import BooleanExpression, Reference
from lakeskip.sql.predicates import to_expression
from lakeskip.sql.statement_types import DIALECT
from lakeskip.types import RowType

__all__ = ["parse_partition_predicate"]


def parse_partition_predicate(where: str, partition_type: RowType) -> BooleanExpression:
    """Parse ``where`` as an unbound predicate over the columns of ``partition_type``.

    Column names match case-insensitively and come out as the partition column's own name.
    Parts lakeskip cannot translate become ``AlwaysTrue`` (keep), as in query pruning.

    Raises:
        SqlParseError: ``where`` is not a valid SQL predicate (with line and column).
        InvalidArgumentError: ``where`` names a column that is not a partition column.
    """
    try:
        node = sqlglot.parse_one(where, read=DIALECT)
    except (ParseError, TokenError) as e:
        err = e.errors[0] if isinstance(e, ParseError) and e.errors else {}
        raise SqlParseError(
            f"cannot parse where => '{where}': {err.get('description', str(e))}",
            err.get("line"),
            err.get("col"),
        ) from e
    if not isinstance(node, exp.Expression):  # parse_one is typed as returning the base Expr
        raise SqlParseError(f"where => '{where}' is not a predicate")
    keys = partition_type.names
    lowered = {k.lower(): k for k in keys}
    for col in node.find_all(exp.Column):
        if col.name.lower() not in lowered:
            raise InvalidArgumentError(
                f"where => '{where}': {col.name} is not a partition column "
                f"(partition columns: {', '.join(keys)})"
            )

    def column_of(n: exp.Expression) -> Reference | None:
        if isinstance(n, exp.Column) and n.name.lower() in lowered:
            return Reference(lowered[n.name.lower()])
        return None

    return to_expression(node, column_of, partition_type)
