"""``mergekit rewrite``: the seed's append-only SQL (calcite-sql-rewriter) for a backend database.

A backend database (PostgreSQL, Hive, Spark, Trino, ...) holds, for every journalled logical table ``t``, a
physical table ``t_journal`` with the business columns plus ``version_number`` and
``subsequent_version_number``. :func:`rewrite` turns one statement written against the logical tables into
statements against the journal tables that only ever append:

* ``SELECT``: every read of ``t`` (in any query shape: joins, subqueries, CTEs, INSERT ... SELECT sources)
  becomes the latest live version per key::

      (SELECT cols FROM (SELECT *, MAX(version_number) OVER (PARTITION BY key) AS last_version_number
                         FROM t_journal) AS last_link
       WHERE subsequent_version_number IS NULL AND version_number = last_version_number) AS t

  so that user filters apply after the latest version has been picked (seed-systems.md 1.4).
* ``INSERT``: rows go to ``t_journal`` with a new ``version_number``.
* ``UPDATE``: ``INSERT INTO t_journal SELECT <new values> FROM (<latest versions>) AS t WHERE <live> AND
  <user predicate>``: one new version of every matched live row, unchanged columns copied. Assigning a key
  column moves the row: the same statement also appends a tombstone under the old key.
* ``DELETE``: a tombstone, a copy of the latest row whose ``version_number`` = ``subsequent_version_number``.
* ``MERGE``: a single ``INSERT ... SELECT`` over ``<latest target> RIGHT|FULL|INNER JOIN <source>`` whose
  ``CASE`` expressions pick the first WHEN clause that holds (INSERT, UPDATE or DELETE row per source/target
  row). One statement, so everything is computed from the same snapshot.

The new version is ``CURRENT_TIMESTAMP`` (``version_type`` timestamp, the seed's default) or
``(SELECT COALESCE(MAX(version_number), 0) + 1 FROM t_journal)`` (bigint): one version per statement.

Everything is built as sqlglot trees from the parsed statement, never by pasting user text, and printed with
every identifier quoted, so hostile names and literals stay what they are in each dialect.

Which tables are journalled: the names in ``journal_tables`` when it is not empty (the seed's rule; other
tables, and the ``*_journal`` tables themselves, pass through unchanged), otherwise every table (mergekit's
rule: every table of a journal catalog is journalled). Keys come from ``journal_tables`` or ``default_key``.

Differences from mergekit's own journal connector, which a backend database cannot enforce in plain SQL:
the rewrite does not check primary keys (an INSERT of a live key appends a newer version, as in the seed),
a key move onto a live key overwrites it, and a MERGE whose target row matches several source rows
appends several versions with the same version number (a ``PRIMARY KEY (key, version_number)`` on the
journal table, as in the seed's DDL, turns both of the latter into a duplicate-key error).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql import Delete, Insert, Merge, MergeAction, MergeCaseKind, Query, Update, parse_statement
from mergekit_journal._config import _key_list

__all__ = ["DIALECTS", "JournalOptions", "rewrite"]

DIALECTS: tuple[str, ...] = ("postgres", "hive", "spark", "trino")

BIGINT = "bigint"
TIMESTAMP = "timestamp"

_VERSION_TYPES = {
    "bigint": BIGINT,
    "long": BIGINT,
    "int64": BIGINT,
    "timestamp": TIMESTAMP,
    "timestamptz": TIMESTAMP,
    "timestamp with time zone": TIMESTAMP,
}

# Option names: the journal connector's catalog options, and the seed's model operands.
_OPTION_ALIASES = {
    "journal_suffix": "journal_suffix",
    "journalsuffix": "journal_suffix",
    "version_field": "version_field",
    "journalversionfield": "version_field",
    "subsequent_version_field": "subsequent_version_field",
    "journalsubsequentversionfield": "subsequent_version_field",
    "version_type": "version_type",
    "journalversiontype": "version_type",
    "default_key": "default_key",
    "journaldefaultkey": "default_key",
    "journal_tables": "journal_tables",
    "journaltables": "journal_tables",
}
# Catalog options of the journal connector that say nothing about the SQL.
_IGNORED_OPTIONS = {"connector", "warehouse", "catalog_uri", "retention", "rows_per_file"}


def _invalid(message: str) -> MergekitError:
    return MergekitError(ErrorCode.INVALID_ARGUMENTS, message)


def normalize_version_type(text: str) -> str:
    """``'TIMESTAMP'`` / ``'timestamp(6) with time zone'`` -> ``'timestamp'``; ``'BIGINT'`` -> ``'bigint'``."""
    key = " ".join(str(text).strip().lower().split())
    if key in _VERSION_TYPES:
        return _VERSION_TYPES[key]
    if key.startswith("timestamp"):
        return TIMESTAMP
    raise _invalid(f"Unknown version type: {text}")


def _journal_tables(value: Any) -> dict[str, tuple[str, ...] | None]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {str(name).lower(): _key_list(key, "journal_tables") for name, key in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return {str(name).lower(): None for name in value}
    raise _invalid("journalTables entry is invalid or missing")


@attrs.frozen(kw_only=True)
class JournalOptions:
    """The journal convention of the backend database (the journal connector's catalog options)."""

    journal_suffix: str = attrs.field(default="_journal", converter=lambda s: str(s).lower())
    version_field: str = attrs.field(default="version_number", converter=lambda s: str(s).lower())
    subsequent_version_field: str = attrs.field(default="subsequent_version_number", converter=lambda s: str(s).lower())
    version_type: str = attrs.field(default=TIMESTAMP, converter=normalize_version_type)
    default_key: tuple[str, ...] | None = attrs.field(default=None, converter=lambda v: _key_list(v, "default_key"))
    journal_tables: Mapping[str, tuple[str, ...] | None] = attrs.field(factory=dict, converter=_journal_tables)

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> JournalOptions:
        """Options by the connector's names (``version_type``) or the seed's (``journalVersionType``);
        connector-only options (``warehouse``, ``catalog_uri``, ...) are ignored."""
        kwargs: dict[str, Any] = {}
        for name, value in options.items():
            key = str(name).lower()
            if key in _IGNORED_OPTIONS:
                continue
            if key not in _OPTION_ALIASES:
                raise _invalid(f"Unknown journal option: {name}")
            kwargs[_OPTION_ALIASES[key]] = value
        return cls(**kwargs)


@attrs.frozen
class _Journalled:
    """A journalled logical table as one statement sees it."""

    table: exp.Table  # the logical name as written (db/catalog parts kept), identifiers normalised
    name: str  # last part, lower case
    key: tuple[str, ...]
    columns: tuple[str, ...] | None  # business columns in order, when known


def _ident(name: str) -> exp.Identifier:
    return exp.Identifier(this=name, quoted=True)


def _col(name: str, table: str | None = None) -> exp.Column:
    return exp.Column(this=_ident(name), table=_ident(table) if table is not None else None)


def _alias(node: exp.Expression, name: str) -> exp.Alias:
    return exp.Alias(this=node, alias=_ident(name))


def _table_alias(name: str) -> exp.TableAlias:
    return exp.TableAlias(this=_ident(name))


def _and(*conditions: exp.Expression | None) -> exp.Expression | None:
    parts = [c for c in conditions if c is not None]
    if not parts:
        return None
    out = parts[0]
    for c in parts[1:]:
        out = exp.And(this=out, expression=c)
    return out


def _or(conditions: Sequence[exp.Expression]) -> exp.Expression:
    parts = [exp.Paren(this=c) if isinstance(c, exp.And) else c for c in conditions]
    out = parts[0]
    for c in parts[1:]:
        out = exp.Or(this=out, expression=c)
    return out


def _paren(node: exp.Expression) -> exp.Expression:
    if isinstance(node, (exp.Column, exp.Literal, exp.Boolean, exp.Null, exp.Paren)):
        return node
    return exp.Paren(this=node)


def _condition(node: exp.Expression) -> exp.Expression:
    """A user predicate about to be ANDed with others: parenthesised when it is an OR (or AND) chain."""
    return exp.Paren(this=node) if isinstance(node, exp.Connector) else node


def _normalize_identifiers(node: exp.Expression) -> exp.Expression:
    """Trino folds every identifier to lower case, quoted or not; print them all quoted."""
    for ident in node.find_all(exp.Identifier):
        ident.set("this", str(ident.this).lower())
        ident.set("quoted", True)
    return node


def _cte_names(node: exp.Expression) -> set[str]:
    return {str(cte.alias).lower() for cte in node.find_all(exp.CTE)}


def _has_star_projection(node: exp.Expression) -> bool:
    for star in node.find_all(exp.Star):
        parent = star.parent
        if isinstance(parent, exp.Column):
            parent = parent.parent
        if isinstance(parent, exp.Select):
            return True
    return False


class _Rewriter:
    def __init__(self, options: JournalOptions, schemas: Mapping[str, Sequence[str]], dialect: str) -> None:
        self.options = options
        self.dialect = dialect
        self.schemas = {str(k).lower(): tuple(str(c).lower() for c in v) for k, v in schemas.items()}

    # ---- tables -------------------------------------------------------------------------------------

    def info(self, table: exp.Table) -> _Journalled | None:
        """The journalled table ``table`` names, or None for a pass-through table."""
        parts = [str(p.name).lower() for p in table.parts]
        name = parts[-1]
        full = ".".join(parts)
        o = self.options
        if o.journal_suffix and name.endswith(o.journal_suffix) and len(name) > len(o.journal_suffix):
            return None
        if o.journal_tables:
            listed = full if full in o.journal_tables else name if name in o.journal_tables else None
            if listed is None:
                return None
            key = o.journal_tables[listed] or o.default_key
        else:
            key = o.default_key
        if not key:
            raise _invalid(f"No primary key given for table: {full}")
        columns = self.schemas.get(full, self.schemas.get(name))
        if columns is not None:
            missing = [k for k in key if k not in columns]
            if missing:
                raise MergekitError(
                    ErrorCode.COLUMN_NOT_FOUND, f"Key column '{missing[0]}' is not a column of table {full}"
                )
            meta = [c for c in columns if c in (o.version_field, o.subsequent_version_field)]
            if meta:
                raise _invalid(f"The columns of table {full} must not include the version column '{meta[0]}'")
        logical = exp.Table(
            this=_ident(name),
            db=_ident(parts[-2]) if len(parts) > 1 else None,
            catalog=_ident(parts[-3]) if len(parts) > 2 else None,
        )
        return _Journalled(table=logical, name=name, key=tuple(key), columns=columns)

    def journal_table(self, info: _Journalled) -> exp.Table:
        table = info.table.copy()
        table.set("this", _ident(info.name + self.options.journal_suffix))
        return table

    def last_version_alias(self, info: _Journalled) -> str:
        name = "last_version_number"
        taken = set(info.columns or ()) | {self.options.version_field, self.options.subsequent_version_field}
        while name in taken:
            name = "_" + name
        return name

    def version_expr(self, info: _Journalled) -> exp.Expression:
        """The version one statement writes."""
        if self.options.version_type == TIMESTAMP:
            return exp.CurrentTimestamp()
        latest = exp.Coalesce(this=exp.Max(this=_col(self.options.version_field)), expressions=[exp.Literal.number(0)])
        select = exp.Select(expressions=[exp.Add(this=latest, expression=exp.Literal.number(1))]).from_(
            self.journal_table(info), copy=False
        )
        return exp.Subquery(this=select)

    def versions(self, info: _Journalled, alias: str, bound: exp.Expression | None = None) -> exp.Subquery:
        """``(SELECT *, MAX(v) OVER (PARTITION BY key) AS last_version_number FROM t_journal) AS alias``."""
        window = exp.Window(
            this=exp.Max(this=_col(self.options.version_field)),
            partition_by=[_col(k) for k in info.key],
        )
        select = exp.Select(expressions=[exp.Star(), _alias(window, self.last_version_alias(info))]).from_(
            self.journal_table(info), copy=False
        )
        if bound is not None:
            select = select.where(exp.LTE(this=_col(self.options.version_field), expression=bound), copy=False)
        return exp.Subquery(this=select, alias=_table_alias(alias))

    def live(self, info: _Journalled, alias: str) -> exp.Expression:
        """``alias.subsequent_version_number IS NULL AND alias.version_number = alias.last_version_number``."""
        return exp.And(
            this=exp.Is(this=_col(self.options.subsequent_version_field, alias), expression=exp.Null()),
            expression=exp.EQ(
                this=_col(self.options.version_field, alias),
                expression=_col(self.last_version_alias(info), alias),
            ),
        )

    def latest(
        self,
        info: _Journalled,
        alias: exp.TableAlias | str,
        *,
        bound: exp.Expression | None = None,
        all_columns: bool = False,
    ) -> exp.Subquery:
        """The logical table: the latest live version per key, as a FROM item aliased ``alias``."""
        inner = "last_link"
        if all_columns or info.columns is None:
            projection: list[exp.Expression] = [exp.Star()]
        else:
            projection = [_col(c, inner) for c in info.columns]
        select = (
            exp.Select(expressions=projection)
            .from_(self.versions(info, inner, bound), copy=False)
            .where(self.live(info, inner), copy=False)
        )
        table_alias = _table_alias(alias) if isinstance(alias, str) else alias
        return exp.Subquery(this=select, alias=table_alias)

    # ---- reads --------------------------------------------------------------------------------------

    def _bound(self, table: exp.Table) -> exp.Expression | None:
        version = table.args.get("version")
        if not isinstance(version, exp.Version):
            return None
        kind = str(version.this).upper()
        value = version.args.get("expression")
        if value is None:
            raise _invalid("FOR ... AS OF needs a value")
        if kind == "VERSION" and self.options.version_type != BIGINT:
            raise MergekitError(
                ErrorCode.NOT_SUPPORTED, "FOR VERSION AS OF needs bigint versions; use FOR TIMESTAMP AS OF"
            )
        if kind == "TIMESTAMP" and self.options.version_type != TIMESTAMP:
            raise MergekitError(
                ErrorCode.NOT_SUPPORTED, "FOR TIMESTAMP AS OF needs timestamp versions; use FOR VERSION AS OF"
            )
        return value.copy()

    def rewrite_reads(self, node: exp.Expression) -> exp.Expression:
        """Replace every read of a journalled table in ``node`` (in place) by its latest live versions."""
        ctes = _cte_names(node)
        targets: list[tuple[exp.Table, _Journalled]] = []
        for table in list(node.find_all(exp.Table)):
            if not table.name or (table is not node and not isinstance(table.parent, (exp.From, exp.Join))):
                continue
            if len(table.parts) == 1 and table.name.lower() in ctes:
                continue
            info = self.info(table)
            if info is not None:
                targets.append((table, info))
        if any(info.columns is None for _, info in targets) and _has_star_projection(node):
            unknown = next(info.name for _, info in targets if info.columns is None)
            raise _invalid(
                f"SELECT * over the journalled table {unknown} needs its columns (schemas, or --schema {unknown}=c1,c2,...)"
            )
        for table, info in targets:
            alias_node = table.args.get("alias")
            alias: exp.TableAlias | str = alias_node.copy() if alias_node is not None else info.name
            replacement = self.latest(info, alias, bound=self._bound(table))
            if table is node:
                return replacement
            table.replace(replacement)
        return node

    # ---- statements ---------------------------------------------------------------------------------

    def target(self, name_parts: Sequence[str]) -> exp.Table:
        return exp.Table(
            this=_ident(name_parts[-1]),
            db=_ident(name_parts[-2]) if len(name_parts) > 1 else None,
            catalog=_ident(name_parts[-3]) if len(name_parts) > 2 else None,
        )

    def expr(self, node: exp.Expression) -> exp.Expression:
        """A user expression, copied, its identifiers normalised and its table reads rewritten."""
        return self.rewrite_reads(_normalize_identifiers(node.copy()))

    def columns_of(self, info: _Journalled, what: str) -> tuple[str, ...]:
        if info.columns is None:
            raise _invalid(
                f"{what} of the journalled table {info.name} needs its columns "
                f"(schemas, or --schema {info.name}=c1,c2,...)"
            )
        return info.columns

    def check_columns(self, info: _Journalled, names: Sequence[str]) -> None:
        meta = (self.options.version_field, self.options.subsequent_version_field)
        for n in names:
            if n in meta:
                raise _invalid(f"Column '{n}' of table {info.name} is written by the journal, not by statements")
            if info.columns is not None and n not in info.columns:
                raise MergekitError(ErrorCode.COLUMN_NOT_FOUND, f"Column '{n}' cannot be resolved in table {info.name}")

    def insert_into(self, info: _Journalled, columns: Sequence[str], source: exp.Expression) -> exp.Insert:
        schema = exp.Schema(this=self.journal_table(info), expressions=[_ident(c) for c in columns])
        return exp.Insert(this=schema, expression=source)

    def moved(self, info: _Journalled, assigned: Mapping[str, exp.Expression], alias: str) -> exp.Expression | None:
        """True when the assignments give the row another key (None: no key column is assigned)."""
        changes = [
            exp.Not(this=exp.Paren(this=exp.NullSafeEQ(this=_paren(assigned[k].copy()), expression=_col(k, alias))))
            for k in info.key
            if k in assigned
        ]
        return exp.Paren(this=_or(changes)) if changes else None

    def query(self, st: Query) -> exp.Expression:
        return self.expr(st.node)

    def insert(self, st: Insert) -> exp.Expression:
        target = self.target(st.target.parts)
        source = self.expr(st.source.node)
        info = self.info(target)
        if info is None:
            cols = [_ident(c) for c in st.columns] if st.columns is not None else []
            this: exp.Expression = exp.Schema(this=target, expressions=cols) if cols else target
            return exp.Insert(this=this, expression=source)
        columns = st.columns if st.columns is not None else self.columns_of(info, "INSERT without a column list")
        self.check_columns(info, columns)
        version = self.version_expr(info)
        if isinstance(source, exp.Values) and self.dialect == "postgres":
            for row in source.expressions:
                row.append("expressions", version.copy())
            body: exp.Expression = source
        elif isinstance(source, exp.Select):
            source.select(_alias(version, self.options.version_field), copy=False)
            body = source
        else:
            if isinstance(source, exp.Values) and source.args.get("alias") is None:
                source.set("alias", _table_alias("src"))
                from_item: exp.Expression = source
            elif isinstance(source, exp.Values):
                from_item = source
            else:
                from_item = exp.Subquery(this=source, alias=_table_alias("src"))
            alias = from_item.alias_or_name
            body = exp.Select(
                expressions=[
                    exp.Column(this=exp.Star(), table=_ident(alias)),
                    _alias(version, self.options.version_field),
                ]
            ).from_(from_item, copy=False)
        return self.insert_into(info, [*columns, self.options.version_field], body)

    def update(self, st: Update) -> exp.Expression:
        target = self.target(st.target.parts)
        info = self.info(target)
        if info is None:
            node = exp.Update(
                this=target,
                expressions=[exp.EQ(this=_col(n), expression=self.expr(e.node)) for n, e in st.assignments],
                where=exp.Where(this=self.expr(st.where.node)) if st.where is not None else None,
            )
            return node
        columns = self.columns_of(info, "UPDATE")
        assigned = {n: self.expr(e.node) for n, e in st.assignments}
        self.check_columns(info, list(assigned))
        alias = info.name
        where = self.live(info, alias)
        if st.where is not None:
            where = exp.And(this=where, expression=_condition(self.expr(st.where.node)))
        v, sv = self.options.version_field, self.options.subsequent_version_field
        new_rows = (
            exp.Select(
                expressions=[
                    *(_alias(assigned[c].copy(), c) if c in assigned else _col(c, alias) for c in columns),
                    _alias(self.version_expr(info), v),
                ]
            )
            .from_(self.versions(info, alias), copy=False)
            .where(where.copy(), copy=False)
        )
        moved = self.moved(info, assigned, alias)
        if moved is None:
            return self.insert_into(info, [*columns, v], new_rows)
        new_rows.select(_alias(exp.Null(), sv), copy=False)
        tombstones = self.tombstones(
            info, columns, alias, self.versions(info, alias), exp.And(this=where, expression=moved)
        )
        return self.insert_into(
            info, [*columns, v, sv], exp.Union(this=new_rows, expression=tombstones, distinct=False)
        )

    def tombstones(
        self,
        info: _Journalled,
        columns: Sequence[str],
        alias: str,
        from_item: exp.Expression,
        where: exp.Expression,
    ) -> exp.Select:
        v, sv = self.options.version_field, self.options.subsequent_version_field
        return (
            exp.Select(
                expressions=[
                    *(_col(c, alias) for c in columns),
                    _alias(self.version_expr(info), v),
                    _alias(self.version_expr(info), sv),
                ]
            )
            .from_(from_item, copy=False)
            .where(where, copy=False)
        )

    def delete(self, st: Delete) -> exp.Expression:
        target = self.target(st.target.parts)
        info = self.info(target)
        if info is None:
            return exp.Delete(
                this=target, where=exp.Where(this=self.expr(st.where.node)) if st.where is not None else None
            )
        # Without the table's columns the tombstone carries the key only (the other columns are NULL).
        columns = info.columns if info.columns is not None else info.key
        alias = info.name
        where = self.live(info, alias)
        if st.where is not None:
            where = exp.And(this=where, expression=_condition(self.expr(st.where.node)))
        body = self.tombstones(info, columns, alias, self.versions(info, alias), where)
        v, sv = self.options.version_field, self.options.subsequent_version_field
        return self.insert_into(info, [*columns, v, sv], body)

    def merge(self, st: Merge) -> exp.Expression:
        target = self.target(st.target.parts)
        info = self.info(target)
        if info is None:
            raise MergekitError(
                ErrorCode.NOT_SUPPORTED,
                f"MERGE into the table {'.'.join(st.target.parts)}, which is not journalled, cannot be rewritten",
            )
        columns = self.columns_of(info, "MERGE")
        v, sv = self.options.version_field, self.options.subsequent_version_field
        t = (st.target_alias or info.name).lower()
        kinds = {c.kind for c in st.cases}
        if MergeCaseKind.NOT_MATCHED_BY_SOURCE in kinds:
            join_side: str | None = "FULL"
        elif MergeCaseKind.NOT_MATCHED in kinds:
            join_side = "RIGHT"
        else:
            join_side = None  # inner join

        # The source, its reads rewritten; wrapped with a presence flag for a FULL join.
        source = self.expr(st.source.node)
        s = (st.source.alias or "source").lower()
        if source.args.get("alias") is None:
            source.set("alias", _table_alias(s))
        present = "mk_source_present"
        if join_side == "FULL":
            source = exp.Subquery(
                this=exp.Select(expressions=[exp.Star(), _alias(exp.true(), present)]).from_(source, copy=False),
                alias=_table_alias(s),
            )

        target_present = exp.Not(this=exp.Is(this=_col(v, t), expression=exp.Null()))
        target_absent = exp.Is(this=_col(v, t), expression=exp.Null())
        source_absent = exp.Is(this=_col(present, s), expression=exp.Null())
        source_present = exp.Not(this=exp.Is(this=_col(present, s), expression=exp.Null()))
        kind_guard: dict[MergeCaseKind, exp.Expression | None] = {
            MergeCaseKind.MATCHED: None
            if join_side is None
            else target_present
            if join_side == "RIGHT"
            else exp.And(this=target_present, expression=source_present),
            MergeCaseKind.NOT_MATCHED: target_absent,
            MergeCaseKind.NOT_MATCHED_BY_SOURCE: source_absent,
        }

        guards: list[exp.Expression] = []
        values: list[dict[str, exp.Expression]] = []  # per case: column -> value
        moves: list[exp.Expression | None] = []
        for case in st.cases:
            cond = _condition(self.expr(case.condition.node)) if case.condition is not None else None
            kind = kind_guard[case.kind]
            guard = _and(kind.copy() if kind is not None else None, cond)
            guards.append(guard if guard is not None else exp.true())
            if case.action is MergeAction.INSERT:
                names = case.insert_columns if case.insert_columns is not None else columns
                if len(names) != len(case.insert_values):
                    raise MergekitError(
                        ErrorCode.SYNTAX_ERROR,
                        f"INSERT has {len(names)} columns but {len(case.insert_values)} values",
                    )
                self.check_columns(info, names)
                given = {n: self.expr(e.node) for n, e in zip(names, case.insert_values, strict=True)}
                values.append({c: given.get(c, exp.Null()) for c in columns})
                moves.append(None)
            elif case.action is MergeAction.UPDATE:
                assigned = {n: self.expr(e.node) for n, e in case.assignments}
                self.check_columns(info, list(assigned))
                values.append({c: assigned.get(c, _col(c, t)) for c in columns})
                moves.append(self.moved(info, assigned, t))
            else:
                values.append({c: _col(c, t) for c in columns})
                moves.append(None)

        def case_of(results: Sequence[exp.Expression], default: exp.Expression | None = None) -> exp.Expression:
            if default is None and all(isinstance(r, exp.Null) for r in results):
                # a plain NULL: a CASE of NULLs would be typed text by PostgreSQL
                return exp.Null()
            return exp.Case(
                ifs=[exp.If(this=g.copy(), true=r.copy()) for g, r in zip(guards, results, strict=True)],
                default=default,
            )

        on = self.expr(st.on.node)

        def on_copy() -> exp.Expression:
            return on.copy()

        version = self.version_expr(info)
        deletes = [c.action is MergeAction.DELETE for c in st.cases]
        projection: list[exp.Expression] = [_alias(case_of([vals[c] for vals in values]), c) for c in columns]
        projection.append(_alias(version.copy(), v))
        insert_columns = [*columns, v]
        any_move = any(m is not None for m in moves)
        if any(deletes) or any_move:
            projection.append(_alias(case_of([version.copy() if d else exp.Null() for d in deletes], default=None), sv))
            insert_columns.append(sv)
        main = self._joined_select(info, t, source, on_copy, join_side, projection, _or([g.copy() for g in guards]))
        if not any_move:
            return self.insert_into(info, insert_columns, main)
        moved_rows = case_of([m if m is not None else exp.false() for m in moves], default=exp.false())
        tomb_projection: list[exp.Expression] = [_col(c, t) for c in columns]
        tomb_projection += [_alias(version.copy(), v), _alias(version.copy(), sv)]
        tombs = self._joined_select(info, t, source, on_copy, join_side, tomb_projection, moved_rows)
        return self.insert_into(info, insert_columns, exp.Union(this=main, expression=tombs, distinct=False))

    def _joined_select(
        self,
        info: _Journalled,
        t: str,
        source: exp.Expression,
        on: Any,
        join_side: str | None,
        projection: list[exp.Expression],
        where: exp.Expression,
    ) -> exp.Select:
        target_rel = self.latest(info, t, all_columns=True)
        join = exp.Join(this=source.copy(), on=on())
        if join_side is not None:
            join.set("side", join_side)
        select = exp.Select(expressions=projection).from_(target_rel, copy=False)
        select.append("joins", join)
        return select.where(where, copy=False)


def rewrite(
    sql: str,
    *,
    dialect: str,
    options: JournalOptions | Mapping[str, Any] | None = None,
    schemas: Mapping[str, Sequence[str]] | None = None,
    pretty: bool = False,
) -> str:
    """The seed-style append-only SQL for one statement, in ``dialect`` (postgres, hive, spark or trino).

    ``sql`` is written in mergekit's dialect (Trino SQL) against the logical tables. ``schemas`` maps a
    table name (``t`` or ``schema.t``) to its business columns in order; UPDATE and MERGE need them (every
    non-key column is copied into the new version), and so do ``SELECT *`` and INSERT without a column list.
    Several statements in the result are separated by ``;``.
    """
    d = str(dialect).lower()
    if d not in DIALECTS:
        raise _invalid(f"Unknown dialect: {dialect} (expected one of {', '.join(DIALECTS)})")
    opts = options if isinstance(options, JournalOptions) else JournalOptions.from_mapping(options or {})
    rw = _Rewriter(opts, schemas or {}, d)
    st = parse_statement(sql)
    if isinstance(st, Query):
        out = rw.query(st)
    elif isinstance(st, Insert):
        out = rw.insert(st)
    elif isinstance(st, Update):
        out = rw.update(st)
    elif isinstance(st, Delete):
        out = rw.delete(st)
    elif isinstance(st, Merge):
        out = rw.merge(st)
    else:
        raise MergekitError(
            ErrorCode.NOT_SUPPORTED,
            f"{type(st).__name__} cannot be rewritten: only SELECT, INSERT, UPDATE, DELETE and MERGE "
            "(table manipulations (DDL) are not supported, as in the seed)",
        )
    statements = out if isinstance(out, list) else [out]
    return ";\n".join(s.sql(dialect=d, identify=True, pretty=pretty) for s in statements)
