"""Issue 27: one Arrow compiler of lowered expressions (mergekit/execution/arrow/compiler.py). Nothing else in
mergekit evaluates a lowered tree, the MERGE lookups (cases.py) and the row-level statements (rows.py) compile
with it, and the two configurations give the same values and the same errors for the same trees."""

from __future__ import annotations

import ast
import copy
import datetime as dt
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from mergekit.errors import MergekitError
from mergekit.execution.arrow.cases import JoinedColumns, JoinedRows
from mergekit.execution.arrow.compiler import ArrowCompiler, Features, Lookup, Unsupported, column_of
from mergekit.execution.arrow.rows import PageColumns
from mergekit.sql import Apply, Const, Ref, SubqueryRef, lower_for_rows, parse_expression

ROOT = Path(__file__).resolve().parents[2]
COMPILER = "mergekit/execution/arrow/compiler.py"
LOWERED_NODES = {"Apply", "Const", "Ref", "SubqueryRef"}
# every operator the lowerings produce (mergekit/sql/analysis/lower.py, lower_rows.py)
OPS = {"eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not", "is_null", "is_not_null", "add", "subtract"}
OPS |= {"multiply", "negate", "in", "like", "mod"}
# code that reads lowered trees without evaluating them, and why it may
READERS = {
    (
        "mergekit/execution/dml/row_level.py",
        "_predicate",
    ): "delete pushdown: conjuncts become the SPI's DeletePredicate",
    ("mergekit/execution/dml/row_level.py", "_subquery_nodes"): "finds the subqueries Spark runs on the driver",
    ("mergekit/execution/dml/row_level.py", "_column_names"): "the columns a row-level task must read (its scan)",
}
LOWERING = ("mergekit/sql/analysis/lower.py", "mergekit/sql/analysis/lower_rows.py")  # where the trees are made


# ---- one compiler --------------------------------------------------------------------------------------------


def _modules() -> list[tuple[str, ast.Module]]:
    return [
        (p.relative_to(ROOT).as_posix(), ast.parse(p.read_text(), filename=str(p)))
        for p in sorted((ROOT / "mergekit").rglob("*.py"))
    ]


def _definitions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Module functions and methods (nested functions belong to the definition around them)."""
    out: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out.append(node)
        elif isinstance(node, ast.ClassDef):
            out += [n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    return out


def _names(node: ast.AST) -> set[str]:
    return {
        n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node) if isinstance(n, ast.Name | ast.Attribute)
    }


def _inspects_lowered_trees(fn: ast.AST) -> bool:
    """isinstance / match against a lowered node class, or a comparison of ``.op`` with an operator's name."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            if len(node.args) == 2 and _names(node.args[1]) & LOWERED_NODES:
                return True
        if isinstance(node, ast.MatchClass) and _names(node.cls) & LOWERED_NODES:
            return True
        if isinstance(node, ast.Compare) and any(
            isinstance(n, ast.Attribute) and n.attr == "op" for n in ast.walk(node)
        ):
            if {c.value for c in ast.walk(node) if isinstance(c, ast.Constant)} & OPS:
                return True
    return False


def _computes_with_arrow(fn: ast.AST, aliases: set[str]) -> bool:
    return any(
        isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in aliases for n in ast.walk(fn)
    )


def _compute_aliases(tree: ast.Module) -> set[str]:
    """The names a module gives pyarrow.compute."""
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {a.asname or a.name for a in node.names if a.name == "pyarrow.compute"}
        elif isinstance(node, ast.ImportFrom) and node.module == "pyarrow":
            aliases |= {a.asname or a.name for a in node.names if a.name == "compute"}
    return aliases


def test_only_the_compiler_evaluates_lowered_trees() -> None:
    """Every function or method in mergekit that inspects a lowered tree (isinstance of Apply / Const / Ref /
    SubqueryRef, or a dispatch on ``.op``) is the compiler's, the lowering's, or a listed reader that computes
    nothing with Arrow."""
    found: dict[str, set[str]] = {}
    for rel, tree in _modules():
        aliases = _compute_aliases(tree)
        for fn in _definitions(tree):
            if not _inspects_lowered_trees(fn):
                continue
            found.setdefault(rel, set()).add(fn.name)
            if rel == COMPILER or rel in LOWERING:
                continue
            assert (rel, fn.name) in READERS, f"{rel}: {fn.name} reads lowered trees; compile them with {COMPILER}"
            assert not _computes_with_arrow(fn, aliases), f"{rel}: {fn.name} evaluates what it reads"
    assert "compile" in found[COMPILER]  # the check sees the compiler's own dispatch
    assert {f for r, f in READERS} <= found["mergekit/execution/dml/row_level.py"]  # no stale entry


def _top_level_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names - {"__all__"}


class _Anonymous(ast.NodeTransformer):
    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Name(id="_", ctx=node.ctx)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        return ast.arg(arg="_")


def _shape(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """A function's body without its docstring and with every variable renamed: two copies of one helper have the
    same shape, whatever their names."""
    body = fn.body[1:] if fn.body and isinstance(fn.body[0], ast.Expr) else fn.body
    module = _Anonymous().visit(ast.Module(body=copy.deepcopy(body), type_ignores=[]))
    return ast.dump(module, annotate_fields=False)


def test_no_second_copy_of_the_compilers_tables_and_helpers() -> None:
    modules = dict(_modules())
    compiler = modules.pop(COMPILER)
    defined = _top_level_names(compiler)
    shapes = {_shape(f) for f in ast.walk(compiler) if isinstance(f, ast.FunctionDef) and len(list(ast.walk(f))) > 40}
    for rel, tree in modules.items():
        if rel.startswith("mergekit/execution/"):
            assert not (_top_level_names(tree) & defined), f"{rel} defines again what {COMPILER} defines"
        copies = [f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and _shape(f) in shapes]
        assert not copies, f"{rel} copies {COMPILER}'s {copies}"
        for node in ast.walk(tree):  # an operator table: lowered operators -> Arrow compute functions
            if (
                isinstance(node, ast.Dict)
                and len({k.value for k in node.keys if isinstance(k, ast.Constant)} & OPS) > 1
            ):
                values = [v.elts[0] if isinstance(v, ast.Tuple) else v for v in node.values]
                assert not any(isinstance(v, ast.Constant) and hasattr(pc, str(v.value)) for v in values), rel


@pytest.mark.parametrize("module", ["mergekit/execution/arrow/cases.py", "mergekit/execution/arrow/rows.py"])
def test_the_lookup_and_row_level_programs_compile_with_it(module: str) -> None:
    tree = dict(_modules())[module]
    imported = {
        a.name
        for n in tree.body
        if isinstance(n, ast.ImportFrom)
        and (n.module == "mergekit.execution.arrow.compiler" or (n.level == 1 and n.module == "compiler"))
        for a in n.names
    }
    assert "ArrowCompiler" in imported
    assert not _names(tree) & {"_Compiler", "RowCompiler"}


def test_the_package_stays_small() -> None:
    package = sorted((ROOT / "mergekit/execution/arrow").glob("*.py"))
    assert len(package) < 20
    assert all(len(p.read_text().splitlines()) <= 800 for p in package)


# ---- the same results in both configurations -------------------------------------------------------------------

D = dt.date
ROWS = {  # t: the lookup's target side, s: its source side; one page for the row-level statement
    "t": {
        "i": pa.array([1, -2, None, 2147483647, -2147483648, 0], pa.int32()),
        "b8": pa.array([127, -128, None, 1, 2, 0], pa.int8()),
        "x": pa.array([1.5, None, math.nan, math.inf, -0.0, 2.0], pa.float64()),
        "s": pa.array(["a", "é", None, "Z", "😀", "\uffff"], pa.string()),
        "d": pa.array([D(2024, 1, 31), None, D(1, 1, 1), D(9999, 12, 31), D(2020, 2, 29), D(1970, 1, 1)]),
        "f": pa.array([True, False, None, True, False, None]),
        "n": pa.array([1, 1, 1, None, None, 1], pa.int32()),
    },
    "s": {
        "j": pa.array([2, None, 3, 1, 1, -1], pa.int32()),
        "s16": pa.array([32767, -32768, 5, None, 1, 2], pa.int16()),
        "l": pa.array([2**63 - 1, -(2**63), None, 1, 0, 5], pa.int64()),
        "y": pa.array([2.0, 1.0, None, -math.inf, 0.0, math.nan], pa.float64()),
        "u": pa.array(["b", "e", "x", None, "\uffff", "😀"], pa.large_string()),
        "e": pa.array([D(2024, 2, 1), D(2000, 1, 1), None, D(1, 1, 1), D(2020, 2, 29), D(1969, 12, 31)]),
        "g": pa.array([True, None, False, False, True, None]),
    },
}
N = 6

EXPRESSIONS = [
    # comparisons by type family; strings by code point (U+FFFF before U+1F600, 'Z' before 'a')
    "i = j", "i <> j", "i < j", "i <= l", "b8 > s16", "s < u", "s >= 'a'", "u > s", "d < e", "d = DATE '2020-02-29'",
    "f = g", "f <> TRUE", "i = NULL", "NULL <> s",
    # three-valued logic, IS NULL
    "f AND g", "f OR g", "NOT f", "NOT (f AND NULL)", "f OR NULL", "f AND NULL", "NULL OR NULL", "NOT NULL",
    "i IS NULL", "s IS NOT NULL", "x IS NULL", "f IS NOT NULL", "NOT (i IS NULL) AND j > 0",
    # integer arithmetic in the wider operand's type, and its overflow
    "i + j", "i - j", "i * j", "i + 1", "b8 + b8", "b8 - 1", "s16 * s16", "s16 + b8", "l + 1", "l - 1", "l * j",
    "-i", "-b8", "-s16", "-l", "-j", "i + NULL", "-5 + i", "-(i - 1)", "i + l", "b8 * j",
    # what may fail is evaluated only where Spark does: AND / OR, a NULL left operand
    "j > 1 AND i * 2 > 1", "i IS NULL OR i + j > 0", "f OR i + 1 > 0", "n + i * 2", "n = i * 2", "NULL + i * 2",
    # DOUBLE arithmetic (IEEE: NaN and infinities, never an error), an INTEGER operand widened
    "x + y", "x - y", "x * y", "x * i", "x - 1", "-x", "y + s16", "x + NULL",
    # date arithmetic and its range
    "d + 1", "d - 1", "d + i", "i + d", "d - e", "e - d", "d - j", "d + b8", "e + s16", "d + 1 > e", "d - 1 < e",
    # what neither configuration computes (Spark's semantics differ from Arrow's)
    "x = y", "x < 1", "s = i", "d + x", "x + l", "s + 1", "f + 1", "NOT i", "i AND f",
]  # fmt: skip
ROW_LEVEL_ONLY_SYNTAX = [  # lowered only for row-level statements today; the compiler computes them the same
    "i IN (1, 2, NULL)", "i IN (1, 2)", "s IN ('a', 'Z')", "s LIKE 'a%'", "u LIKE '%'", "i % j", "l % 0", "j % -1",
    "NOT (j IN (2, 3))",
]  # fmt: skip


def _lowered(sql: str) -> Any:
    expr = parse_expression(sql)
    tree = expr.lowered()
    return tree if tree is not None else lower_for_rows(expr, outer_names={"t"}, columns_of=lambda ref: ())


def _joined() -> JoinedRows:
    """The same six rows as a lookup's join: source and target tables in other orders, taken by index."""
    source_order, target_order = [5, 3, 1, 0, 2, 4], [2, 0, 4, 1, 5, 3]
    source = pa.table({k: v.take(pa.array(source_order)) for k, v in ROWS["s"].items()})
    target = pa.table({k: v.take(pa.array(target_order)) for k, v in ROWS["t"].items()})
    si = pa.array([source_order.index(i) for i in range(N)], pa.int64())
    ti = pa.array([target_order.index(i) for i in range(N)], pa.int64())
    return JoinedRows(source, target, si, ti)


def _page() -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({**ROWS["t"], **ROWS["s"]})


def _lookup_compiler() -> ArrowCompiler:
    """As cases.compile_lookup configures it: the joined table's columns, no subqueries."""
    types = {side: {k: v.type for k, v in ROWS[side].items()} for side in ("t", "s")}
    return ArrowCompiler(JoinedColumns("t", "s", types["t"], types["s"]))


def _row_level_compiler(subqueries: dict[int, Lookup] | None = None) -> ArrowCompiler:
    """As rows.compile_rows configures it: the page's columns, the target's names, subqueries' results."""
    columns = {k: v.type for side in ("t", "s") for k, v in ROWS[side].items()}
    return ArrowCompiler(PageColumns(columns, frozenset({"t"})), Features(subqueries=subqueries or {}))


def _outcome(compiler: ArrowCompiler, rows: Any, tree: Any) -> tuple[Any, ...]:
    try:
        compiled = compiler.compile(tree)
    except Unsupported as exc:
        return ("unsupported", str(exc))
    try:
        values = column_of(compiled.fn(rows), N, compiled.type).to_pylist()
    except MergekitError as exc:
        return ("error", str(exc), compiled.type, compiled.may_fail)
    values = ["NaN" if isinstance(v, float) and math.isnan(v) else v for v in values]
    return ("value", values, compiled.type, compiled.may_fail)


@pytest.mark.parametrize("sql", EXPRESSIONS + ROW_LEVEL_ONLY_SYNTAX)
def test_lookup_and_row_level_configurations_agree(sql: str) -> None:
    tree = _lowered(sql)
    assert tree is not None, sql
    lookup = _outcome(_lookup_compiler(), _joined(), tree)
    row_level = _outcome(_row_level_compiler(), _page(), tree)
    assert lookup == row_level


def test_the_differential_cases_cover_every_outcome() -> None:
    outcomes = {_outcome(_row_level_compiler(), _page(), _lowered(sql))[0] for sql in EXPRESSIONS}
    assert outcomes == {"value", "error", "unsupported"}


# What Spark computes (and the merge path's tests check end to end), spot-checked in one configuration.
EXPECTED = {
    "s < u": [True, False, None, None, False, True],  # 'é' > 'e' by code point; U+FFFF < U+1F600 (not in UTF-16)
    "f OR NULL": [True, None, None, True, None, None],
    "NOT (f AND NULL)": [None, True, None, None, True, None],
    "i + NULL": [None] * 6,
    "j > 1 AND i * 2 > 1": [True, False, None, False, False, False],  # rows 3, 4 overflow where j > 1 decides
    "n + i * 2": [3, -3, None, None, None, 1],  # rows 4 and 5 overflow where n is NULL: not evaluated
    "d - e": [-1, None, None, 3652058, 0, 1],
    "y + s16": [32769.0, -32767.0, None, None, 1.0, "NaN"],
    "i IN (1, 2, NULL)": [True, None, None, None, None, None],
    "j % -1": [0, None, 0, 0, 0, 0],
}
ERRORS = {
    "i + 1": "[NUMERIC_VALUE_OUT_OF_RANGE] Numeric overflow in addition",
    "l * j": "[NUMERIC_VALUE_OUT_OF_RANGE] Numeric overflow in multiplication",
    "b8 + b8": "[NUMERIC_VALUE_OUT_OF_RANGE] tinyint addition overflow: 127 + 127",
    "s16 * s16": "[NUMERIC_VALUE_OUT_OF_RANGE] smallint multiplication overflow: 32767 * 32767",
    "-i": "[NUMERIC_VALUE_OUT_OF_RANGE] Numeric value out of range",  # Spark's UnaryMinus, any integer type
    "-b8": "[NUMERIC_VALUE_OUT_OF_RANGE] Numeric value out of range",
    "d + 1": "[NUMERIC_VALUE_OUT_OF_RANGE] Date out of range: 9999-12-31 + 1",
    "d - 1": "[NUMERIC_VALUE_OUT_OF_RANGE] Date out of range: 0001-01-01 - 1",
    "l % 0": "[DIVISION_BY_ZERO] Division by zero",
}


@pytest.mark.parametrize("sql", sorted(EXPECTED))
def test_values_are_sparks(sql: str) -> None:
    outcome = _outcome(_row_level_compiler(), _page(), _lowered(sql))
    assert outcome[:2] == ("value", EXPECTED[sql])


@pytest.mark.parametrize("sql", sorted(ERRORS))
def test_errors_are_sparks(sql: str) -> None:
    outcome = _outcome(_row_level_compiler(), _page(), _lowered(sql))
    assert outcome[:2] == ("error", ERRORS[sql])


def test_subqueries_are_a_feature_of_the_row_level_configuration() -> None:
    """Lookups have no subquery (a MERGE's lowering makes none); the row-level configuration computes one from
    the results Spark gave on the driver."""
    node = SubqueryRef("scalar", query=None, outer=(Ref(None, "j"),))
    tree = Apply("add", (Ref(None, "i"), node))
    assert _outcome(_lookup_compiler(), _joined(), tree) == ("unsupported", "a subquery")
    lookup = Lookup(kind="scalar", keys=(pa.int32(),), rows={(2,): (10, 1), (3,): (5, 2)}, value_type=pa.int32())
    assert _outcome(_row_level_compiler({id(node): lookup}), _page(), tree) == (
        "error",
        "[SUBQUERY_MULTIPLE_ROWS] Scalar sub-query has returned multiple rows",
        pa.int32(),
        True,
    )
    guarded = Apply(
        "and", (Apply("ne", (Ref(None, "j"), Const(3, "integer"))), Apply("gt", (tree, Const(0, "integer"))))
    )
    assert _outcome(_row_level_compiler({id(node): lookup}), _page(), guarded)[:2] == (
        "value",
        [True, None, False, None, None, None],
    )
