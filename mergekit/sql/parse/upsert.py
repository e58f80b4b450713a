"""INSERT forms that change existing rows, as the MERGE each one means (planned and run as that MERGE).

- ``INSERT OVERWRITE t [(cols)] query`` (Spark): every row of ``t`` is replaced by the query's rows in one commit:
  ``MERGE INTO t USING (query) AS "$new"(cols) ON FALSE WHEN NOT MATCHED THEN INSERT (cols) VALUES ("$new".cols)
  WHEN NOT MATCHED BY SOURCE THEN DELETE``.
- ``INSERT INTO t [AS a] [(cols)] query ON CONFLICT [(keys)] DO NOTHING | DO UPDATE SET ... [WHERE ...]``
  (PostgreSQL): ``MERGE INTO t AS a USING (query) AS excluded(cols) ON a.k = excluded.k AND ... WHEN MATCHED [AND
  where] THEN UPDATE SET ... | DO NOTHING WHEN NOT MATCHED THEN INSERT (cols) VALUES (excluded.cols)``. The
  conflict target must be the table's primary key (PostgreSQL: a unique index); without one it is the primary key.

The engine calls these once it knows the target's columns and primary key (the INSERT's column list may be omitted).
"""

from __future__ import annotations

from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.model import Expression, Insert, Merge, MergeAction, MergeCase, MergeCaseKind, Relation

__all__ = ["overwrite_as_merge", "upsert_as_merge"]

_NEW = "$new"
_EXCLUDED = "excluded"


def _source(insert: Insert, alias: str, columns: tuple[str, ...]) -> Relation:
    return Relation(node=insert.source.node.copy(), alias=alias, column_aliases=columns)


def _insert_case(alias: str, columns: tuple[str, ...]) -> MergeCase:
    return MergeCase(
        kind=MergeCaseKind.NOT_MATCHED,
        action=MergeAction.INSERT,
        insert_columns=columns,
        insert_values=tuple(Expression.column(alias, c) for c in columns),
    )


def overwrite_as_merge(insert: Insert, columns: tuple[str, ...]) -> Merge:
    """``INSERT OVERWRITE`` as a MERGE (``columns``: the INSERT's column list, or the table's columns)."""
    return Merge(
        target=insert.target,
        target_alias=None,
        source=_source(insert, _NEW, columns),
        on=Expression(exp.false()),
        cases=(
            _insert_case(_NEW, columns),
            MergeCase(kind=MergeCaseKind.NOT_MATCHED_BY_SOURCE, action=MergeAction.DELETE),
        ),
    )


def upsert_as_merge(insert: Insert, columns: tuple[str, ...], primary_key: tuple[str, ...]) -> Merge:
    """``INSERT ... ON CONFLICT`` as a MERGE. Raises INVALID_ARGUMENTS when the conflict target is not the primary
    key (PostgreSQL's message)."""
    conflict = insert.on_conflict
    assert conflict is not None
    keys = conflict.keys if conflict.keys is not None else primary_key
    if not primary_key or {k.lower() for k in keys} != {k.lower() for k in primary_key}:
        raise MergekitError(
            ErrorCode.INVALID_ARGUMENTS,
            "there is no unique or exclusion constraint matching the ON CONFLICT specification"
            + (f" (the primary key of {insert.target} is ({', '.join(primary_key)}))" if primary_key else ""),
        )
    by_lower = {c.lower(): c for c in columns}
    missing = [k for k in keys if k.lower() not in by_lower]
    if missing:
        raise MergekitError(
            ErrorCode.NOT_SUPPORTED,
            f"ON CONFLICT: the INSERT must give the conflict key column {missing[0]} (it would be NULL or its default)",
        )
    alias = insert.target_alias or insert.target.name
    on: exp.Expression | None = None
    for key in keys:
        equal = exp.EQ(
            this=Expression.column(alias, key).node, expression=Expression.column(_EXCLUDED, by_lower[key.lower()]).node
        )
        on = equal if on is None else exp.and_(on, equal)
    assert on is not None
    if conflict.assignments:
        matched = MergeCase(
            kind=MergeCaseKind.MATCHED,
            action=MergeAction.UPDATE,
            condition=conflict.where,
            assignments=conflict.assignments,
        )
    else:
        matched = MergeCase(kind=MergeCaseKind.MATCHED, action=MergeAction.NOTHING)
    return Merge(
        target=insert.target,
        target_alias=insert.target_alias,
        source=_source(insert, _EXCLUDED, columns),
        on=Expression(on),
        cases=(matched, _insert_case(_EXCLUDED, columns)),
    )
