"""The lookup path's pieces without Spark: which expressions lower, which statements compile to Arrow, how the
WHEN clauses pick rows, how keys are cut into ranges, and the journal's cut points."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pytest

from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.arrow.cases import JoinedRows, compile_lookup, evaluate_cases
from mergekit.execution.dml.lookup import bucket_expr
from mergekit.planner import TargetTable, plan_merge
from mergekit.spi import ColumnHandle, ColumnMetadata, RowChangeParadigm
from mergekit.sql import Apply, Const, Ref, parse_expression, parse_statement


def test_lowering_covers_a_closed_subset() -> None:
    lowered = parse_expression("s.op = 'D' AND NOT (t.n IS NULL) OR t.x + 1 > -2").lowered()
    assert lowered == Apply(
        "or",
        (
            Apply(
                "and",
                (
                    Apply("eq", (Ref("s", "op"), Const("D", "string"))),
                    Apply("is_not_null", (Ref("t", "n"),)),
                ),
            ),
            Apply("gt", (Apply("add", (Ref("t", "x"), Const(1, "integer"))), Const(-2, "integer"))),
        ),
    )
    assert parse_expression("DATE '2024-02-29'").lowered() == Const(datetime.date(2024, 2, 29), "date")
    assert parse_expression("Upper(V)").lowered() is None  # functions
    assert parse_expression("1.5").lowered() == Const(decimal.Decimal("1.5"), "decimal")
    assert parse_expression("-0.05").lowered() == Const(decimal.Decimal("-0.05"), "decimal")
    assert parse_expression("1234567890123456.5").lowered() is None  # a DECIMAL of more than 15 digits
    assert parse_expression("1.5E0").lowered() == Const(1.5, "double")
    assert parse_expression("2e-3").lowered() == Const(0.002, "double")
    assert parse_expression("DOUBLE '2'").lowered() is None  # a CAST in Spark (nullable)
    assert parse_expression("3000000000").lowered() == Const(3000000000, "bigint")
    assert parse_expression("2147483648").lowered() is None  # its negation is an INTEGER
    assert parse_expression("9223372036854775808").lowered() is None  # a DECIMAL
    assert parse_expression("a / b").lowered() == Apply("divide", (Ref(None, "a"), Ref(None, "b")))  # (DOUBLE only)
    assert parse_expression("a IN (1, NULL)").lowered() == Apply(
        "in", (Ref(None, "a"), Const(1, "integer"), Const(None, "null"))
    )
    assert parse_expression("a IN (SELECT b FROM u)").lowered() is None  # subqueries
    assert parse_expression("a IN (1, upper(b))").lowered() is None
    assert parse_expression("t.a = s.b AND (t.c = 1 AND s.d = 2)").conjunct_count == 3


def _target() -> TargetTable:
    return TargetTable(
        name="lake.default.t",
        columns=(
            ColumnMetadata(name="id", type=pa.int64(), nullable=False),
            ColumnMetadata(name="v", type=pa.string()),
            ColumnMetadata(name="n", type=pa.int32()),
            ColumnMetadata(name="x", type=pa.float64()),
        ),
        row_id=ColumnHandle(name="$row_id", type=pa.int64()),
        paradigm=RowChangeParadigm.CHANGE_ONLY_UPDATED_COLUMNS,
    )


_SOURCE_TYPES = {"id": pa.int64(), "op": pa.string(), "v": pa.string(), "n": pa.int32(), "x": pa.float64()}
_COLUMNS = [ColumnHandle(name=c.name, type=c.type) for c in _target().columns] + [
    ColumnHandle(name="$row_id", type=pa.int64())
]


def _compile(whens: str):
    plan = plan_merge(parse_statement(f"MERGE INTO t USING s ON t.id = s.id {whens}"), _target())
    return compile_lookup(plan, _SOURCE_TYPES, _COLUMNS, {"id": "bigint", "v": "varchar", "n": "integer"})


@pytest.mark.parametrize(
    ("whens", "compiles"),
    [
        ("WHEN MATCHED AND s.op = 'D' THEN DELETE WHEN MATCHED THEN UPDATE SET x = t.x + s.x", True),
        ("WHEN MATCHED THEN DELETE WHEN NOT MATCHED AND s.n > 3 THEN INSERT (id, n) VALUES (s.id, s.n)", True),
        ("WHEN NOT MATCHED THEN INSERT (id, n) VALUES (s.id, s.n)", False),  # insert-only: the anti join
        ("WHEN MATCHED THEN UPDATE SET x = s.n", True),  # INTEGER into DOUBLE: exact
        ("WHEN MATCHED THEN UPDATE SET n = t.n + s.n", True),  # overflow raises as Spark's ANSI arithmetic does
        ("WHEN MATCHED THEN UPDATE SET n = s.id", True),  # BIGINT into INTEGER: range-checked as Spark's CAST
        ("WHEN MATCHED AND s.n > 0 AND t.n * s.n > 3 THEN DELETE", True),  # a right side that may fail: lazy
        ("WHEN MATCHED AND t.x > s.x THEN DELETE", False),  # NaN orders differently
        ("WHEN MATCHED THEN UPDATE SET n = s.x", False),  # DOUBLE into INTEGER rounds in Trino
        ("WHEN MATCHED THEN UPDATE SET v = s.n", False),  # no implicit INTEGER -> VARCHAR here
        ("WHEN MATCHED AND s.op = 1 THEN DELETE", False),  # VARCHAR = INTEGER: Spark's coercion
        ("WHEN MATCHED THEN UPDATE SET v = missing", False),
        ("WHEN MATCHED THEN UPDATE SET v = id", False),  # both sides have id: Spark reports the ambiguity
        ("WHEN NOT MATCHED BY SOURCE THEN DELETE", False),  # a FULL join: the Spark plan
    ],
)
def test_which_statements_compile(whens: str, compiles: bool) -> None:
    assert (_compile(whens) is not None) is compiles


def _rows(source: dict, target: dict, si: list, ti: list) -> JoinedRows:
    return JoinedRows(pa.table(source), pa.table(target), pa.array(si, pa.int64()), pa.array(ti, pa.int64()))


def test_first_case_that_holds_takes_the_row() -> None:
    program = _compile(
        "WHEN MATCHED AND s.op = 'D' THEN DELETE "
        "WHEN MATCHED AND (s.op = 'U' OR t.n IS NULL) THEN UPDATE SET v = s.v, x = t.x + s.x "
        "WHEN NOT MATCHED AND NOT (s.op = 'D') THEN INSERT VALUES (s.id, s.v, s.n, s.x)"
    )
    source = {
        "id": [1, 2, 3, 4, 5, 6],
        "op": ["D", "U", None, None, "I", None],
        "v": ["a", "b", "c", "d", "e", "f"],
        "n": [1, 2, 3, 4, 5, 6],
        "x": [0.5] * 6,
    }
    target = {
        "id": [1, 2, 3, 4],
        "v": ["t"] * 4,
        "n": [10, 20, None, 40],
        "x": [1.0, 2.0, 3.0, 4.0],
        "$row_id": [1, 2, 3, 4],
    }
    rows = _rows(source, target, [0, 1, 2, 3, 4, 5], [0, 1, 2, 3, None, None])
    pages = list(evaluate_cases(program, rows))
    got = sorted(
        (r["id"], r["$operation"], r["$case_number"], r["v"], r["x"], r["$row_id"])
        for p in pages
        for r in p.to_pylist()
    )
    # 1: deleted with its current values; 2: updated; 3: op NULL but t.n NULL: updated; 4: no case holds;
    # 5: inserted; 6: NOT (NULL) is NULL: no case
    assert got == [
        (1, 2, 0, "t", 1.0, 1),
        (2, 3, 1, "b", 2.5, 2),
        (3, 3, 1, "c", 3.5, 3),
        (5, 1, 2, "e", 0.5, None),
    ]
    assert all("$uid" in p.schema.names for p in pages)  # the duplicate check's target row


def test_null_literals_and_negative_numbers() -> None:
    program = _compile(
        "WHEN MATCHED AND (s.op = NULL OR NULL OR s.n > -2) AND NOT (NULL AND s.n = 5) THEN UPDATE SET x = s.x + NULL "
        "WHEN MATCHED AND NULL THEN DELETE"
    )
    rows = _rows(
        {"id": [1, 2, 3], "op": ["a", "b", None], "v": ["a", "b", "c"], "n": [-3, 0, 5], "x": [1.0, 2.0, 3.0]},
        {"id": [1, 2, 3], "v": ["t"] * 3, "n": [1, 2, 3], "x": [1.0] * 3, "$row_id": [1, 2, 3]},
        [0, 1, 2],
        [0, 1, 2],
    )
    got = sorted((r["id"], r["$operation"], r["x"]) for p in evaluate_cases(program, rows) for r in p.to_pylist())
    # 1: -3 > -2 is false, and NULL OR NULL OR false is NULL: no case; 2: updated, x NULL; 3: NOT (NULL AND
    # true) is NULL: no case
    assert got == [(2, 3, None)]


def test_null_for_a_not_null_column_is_a_constraint_violation() -> None:
    program = _compile("WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT (v) VALUES (s.v)")
    rows = _rows(
        {"id": [7], "op": ["I"], "v": ["a"], "n": [1], "x": [1.0]}, {c.name: [] for c in _COLUMNS}, [0], [None]
    )
    with pytest.raises(MergekitError) as info:
        list(evaluate_cases(program, rows))
    assert info.value.code is ErrorCode.CONSTRAINT_VIOLATION and "column: id" in str(info.value)


def test_keys_are_cut_at_the_connectors_points() -> None:
    points = [100, 200, 300, 400, 500, 600, 700, 800, 900]
    expr, ranges = bucket_expr(points, (0, 999), 2)
    assert ranges == 2 and "< CAST(500 AS BIGINT) THEN 0" in expr and "ELSE 1" in expr
    assert "> CAST(999 AS BIGINT) THEN pmod(hash(`$key`), 2)" in expr  # new keys spread over both tasks
    expr, ranges = bucket_expr(points, None, 4)
    assert ranges == 4 and [f"CAST({p} AS BIGINT)" in expr for p in (200, 500, 800)] == [True] * 3
    assert bucket_expr([10], None, 8)[1] == 2  # never more ranges than points allow
    assert bucket_expr([], None, 4) is None and bucket_expr(points, None, 1) is None
    assert "DATE'2024-01-02'" in bucket_expr([datetime.date(2024, 1, 2)], None, 2)[0]
    assert "'k\\'1'" in bucket_expr(["k'1"], None, 2)[0]
    assert bucket_expr([1.5], None, 2) is None  # a type this does not render: hash instead


def test_journal_cut_points_and_key_range() -> None:
    from mergekit_journal._index_handle import key_range, partition_points
    from mergekit_journal._metadata import FileRow

    def file(lo, hi, rows=10):
        return FileRow(
            file_id=lo or 0, path="p", added_seq=1, removed_seq=None, row_version=1, committed_at=0,
            explicit_versions=False, supersedes=False, key_min=lo, key_max=hi, min_version=1, max_version=1,
            row_count=rows, size_bytes=1, vacuumed=False, order_seq=1,
        )  # fmt: skip

    assert partition_points([file(20, 29), file(0, 9), file(10, 19)]) == (10, 20)
    assert partition_points([file(0, 15), file(10, 19)]) == ()  # overlapping ranges: no cut is clean
    assert key_range([file(20, 29), file(0, 9), file(None, None, rows=0)]) == (0, 29)
    assert key_range([file(0, 9), file(None, None)]) is None


def test_key_types_that_join_in_arrow() -> None:
    from pyspark.sql import types as T

    from mergekit.execution.dml.lookup import arrow_join_type, binary_collation

    assert arrow_join_type(T.IntegerType(), pa.int64()) == pa.int64()  # compared as BIGINT, as Spark widens
    assert arrow_join_type(T.LongType(), pa.int16()) == pa.int64()
    assert arrow_join_type(T.StringType(), pa.large_string()) == pa.string()
    assert arrow_join_type(T.DateType(), pa.date32()) == pa.date32()
    assert arrow_join_type(T.DoubleType(), pa.float64()) is None  # NaN, -0.0
    assert arrow_join_type(T.DecimalType(10, 0), pa.int64()) is None
    assert arrow_join_type(T.StringType("UNICODE_CI"), pa.string()) is None  # compares by its collation in Spark
    assert binary_collation(T.StringType()) and binary_collation(T.LongType())
    assert not binary_collation(T.StringType("UTF8_LCASE"))


def test_integer_arithmetic_overflows_only_where_spark_evaluates_it() -> None:
    """Integer arithmetic runs in Arrow with Spark's ANSI errors: a condition that may overflow is evaluated only on
    the rows Spark's CASE reaches (an earlier case took row 1), the right side of AND only where the left one does
    not decide, and values only on the rows their case takes."""
    program = _compile(
        "WHEN MATCHED AND s.n > 1000 THEN DELETE "
        "WHEN MATCHED AND s.n > 0 AND t.n * s.n > 3 THEN UPDATE SET n = t.n * s.n "
        "WHEN NOT MATCHED THEN INSERT (id, n) VALUES (s.id, s.n + 1)"
    )
    source = {"id": [1, 2, 3, 4], "op": ["x"] * 4, "v": ["a"] * 4, "n": [2_000_000_000, 2, -2_000_000_000, 7]}
    source["x"] = [0.0] * 4
    target = {"id": [1, 2, 3], "v": ["t"] * 3, "n": [5, 3, 5], "x": [1.0] * 3, "$row_id": [1, 2, 3]}
    rows = _rows(source, target, [0, 1, 2, 3], [0, 1, 2, None])
    got = sorted((r["id"], r["$operation"], r["n"]) for p in evaluate_cases(program, rows) for r in p.to_pylist())
    assert got == [(1, 2, 5), (2, 3, 6), (4, 1, 8)]  # row 3: s.n > 0 is FALSE, so t.n * s.n is not computed
    with pytest.raises(MergekitError) as info:  # row 1, unmatched: s.n + 1 overflows INTEGER
        list(evaluate_cases(program, _rows({**source, "n": [2**31 - 1, 2, 3, 4]}, target, [0], [None])))
    assert str(info.value) == "[NUMERIC_VALUE_OUT_OF_RANGE] Numeric overflow in addition"
    with pytest.raises(MergekitError) as info:  # row 2, matched: t.n * s.n overflows in the condition
        list(
            evaluate_cases(
                program, _rows({**source, "n": [1, 1000, 3, 4]}, {**target, "n": [3_000_000, 3, 5]}, [1], [0])
            )
        )
    assert str(info.value) == "[NUMERIC_VALUE_OUT_OF_RANGE] Numeric overflow in multiplication"


def test_a_wider_integer_is_range_checked_into_its_column() -> None:
    program = _compile("WHEN MATCHED THEN UPDATE SET n = s.id")
    target = {"id": [1, 2], "v": ["t"] * 2, "n": [0, 0], "x": [1.0] * 2, "$row_id": [1, 2]}
    source = {"id": [1, 2], "op": ["x"] * 2, "v": ["a"] * 2, "n": [0, 0], "x": [0.0] * 2}
    pages = list(evaluate_cases(program, _rows(source, target, [0, 1], [0, 1])))
    assert [r["n"] for p in pages for r in p.to_pylist()] == [1, 2]
    source["id"] = [1, 5_000_000_000]
    with pytest.raises(MergekitError) as info:
        list(evaluate_cases(program, _rows(source, target, [0, 1], [0, 1])))
    assert str(info.value) == "[NUMERIC_VALUE_OUT_OF_RANGE] Out of range for integer: 5000000000"
