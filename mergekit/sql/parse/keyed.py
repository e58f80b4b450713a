"""UPDATE and DELETE of rows named by key, as the MERGE each one means (the driver tier's form of them).

``UPDATE t SET ... WHERE k IN (1, 2) AND ...`` changes exactly the rows that
``MERGE INTO t USING (VALUES 1, 2) AS "$keys"("$key") ON t.k = "$keys"."$key" WHEN MATCHED AND <the WHERE> THEN
UPDATE SET ...`` changes (``DELETE``: ``THEN DELETE``): the WHERE clause is kept whole as the clause's condition, so
the VALUES list only narrows the rows read to those with the named keys, which the WHERE needs anyway. The keys are
distinct literals (one target row can then match only one source row; the caller drops values that differ in text
and are equal in value, ``1`` and ``01``); a WHERE conjunct ``k = literal`` or ``k IN (literal, ...)`` names them.
The engine runs the MERGE by the connector's index on ``k`` when it has one (:mod:`mergekit.execution.dml.driver`).
"""

from __future__ import annotations

from sqlglot import exp

from mergekit.sql.analysis.lower import is_literal
from mergekit.sql.analysis.predicates import conjuncts
from mergekit.sql.model import Delete, Expression, Merge, MergeAction, MergeCase, MergeCaseKind, Relation, Update
from mergekit.sql.references import identifier_name

__all__ = ["KEYS_ALIAS", "KEY_COLUMN", "keyed_as_merge", "whole_as_merge"]

KEYS_ALIAS = "$keys"
KEY_COLUMN = "$key"


def _named_keys(where: exp.Expression, qualifiers: set[str | None]) -> list[tuple[str, list[exp.Expression]]]:
    """(column, its literal values) for each conjunct ``column = literal`` / ``column IN (literals)`` of ``where``,
    in the order written; the values deduplicated by their text."""

    def column_of(node: exp.Expression) -> str | None:
        if isinstance(node, exp.Column) and (identifier_name(node.args.get("table")) or None) in qualifiers:
            return identifier_name(node.this)
        return None

    found: list[tuple[str, list[exp.Expression]]] = []
    for c in conjuncts(where):
        column: str | None = None
        values: list[exp.Expression] = []
        if isinstance(c, exp.EQ):
            for left, right in ((c.this, c.expression), (c.expression, c.this)):
                if column_of(left) is not None and is_literal(right):
                    column, values = column_of(left), [right]
                    break
        elif isinstance(c, exp.In) and not c.args.get("query") and not c.args.get("not"):
            column = column_of(c.this)
            values = list(c.expressions)
            if not values or not all(is_literal(v) for v in values):
                column = None
        if column is not None:
            unique = {v.sql(): v for v in values}
            found.append((column, list(unique.values())))
    return found


def keyed_as_merge(statement: Update | Delete) -> list[tuple[str, Merge]]:
    """For each target column the WHERE clause of ``statement`` names literal values of (see the module's
    docstring): the column and the MERGE that means ``statement``, reading only the rows with those values. Empty
    for a statement without such a conjunct (no WHERE, ``DELETE ... USING``)."""
    if statement.where is None or (isinstance(statement, Delete) and statement.using is not None):
        return []
    alias = statement.target_alias or statement.target.name
    qualifiers: set[str | None] = {None, alias, statement.target.name}
    case = _case(statement)
    out: list[tuple[str, Merge]] = []
    for column, values in _named_keys(statement.where.node, qualifiers):
        rows = exp.Values(expressions=[exp.Tuple(expressions=[v.copy()]) for v in values])
        on = exp.EQ(
            this=Expression.column(alias, column).node, expression=Expression.column(KEYS_ALIAS, KEY_COLUMN).node
        )
        merge = Merge(
            target=statement.target,
            target_alias=statement.target_alias,
            source=Relation(node=rows, alias=KEYS_ALIAS, column_aliases=(KEY_COLUMN,)),
            on=Expression(on),
            cases=(case,),
        )
        out.append((column, merge))
    return out


def whole_as_merge(statement: Update | Delete) -> Merge | None:
    """The MERGE that means ``statement`` over every row of its table: ``MERGE INTO t USING (VALUES 1) AS
    "$keys"("$key") ON TRUE WHEN MATCHED AND <the WHERE> THEN UPDATE SET ... | DELETE`` (each target row matches
    the one source row once); None for ``DELETE ... USING``. The driver tier runs it over a table it reads whole."""
    if isinstance(statement, Delete) and statement.using is not None:
        return None
    rows = exp.Values(expressions=[exp.Tuple(expressions=[exp.Literal.number(1)])])
    return Merge(
        target=statement.target,
        target_alias=statement.target_alias,
        source=Relation(node=rows, alias=KEYS_ALIAS, column_aliases=(KEY_COLUMN,)),
        on=Expression(exp.true()),
        cases=(_case(statement),),
    )


def _case(statement: Update | Delete) -> MergeCase:
    """WHEN MATCHED AND <the WHERE> THEN the statement's change."""
    if isinstance(statement, Update):
        return MergeCase(
            kind=MergeCaseKind.MATCHED,
            action=MergeAction.UPDATE,
            condition=statement.where,
            assignments=statement.assignments,
        )
    return MergeCase(kind=MergeCaseKind.MATCHED, action=MergeAction.DELETE, condition=statement.where)
