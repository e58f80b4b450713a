"""Keys, key moves, tombstones, version numbering, hidden row ids and raw journal inserts."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mergekit.errors import ConstraintViolationError, ErrorCode, MergekitError
from tests.journal.journal_harness import DELETE, INSERT, UPDATE, VERSION_COLUMNS

COLS = [("id", pa.int64()), ("name", pa.string()), ("qty", pa.int32())]


@pytest.fixture
def items(make_harness):
    lake = make_harness(version_type="bigint")
    lake.create("items", COLS, key=["id"])
    lake.insert(
        "items", {"id": 1, "name": "a", "qty": 10}, {"id": 2, "name": "b", "qty": 20}, {"id": 3, "name": "c", "qty": 30}
    )
    return lake


def test_insert_of_live_key_violates_primary_key_and_writes_nothing(items):
    before = items.read("items")
    with pytest.raises(ConstraintViolationError, match=r"Duplicate key \(id\)=\(2\)") as err:
        items.insert("items", {"id": 9, "name": "x"}, {"id": 2, "name": "dup"})
    assert err.value.code == ErrorCode.CONSTRAINT_VIOLATION
    assert items.read("items") == before
    assert len(items.read("items_journal")) == 3
    assert items.handle("items").snapshot_seq == 1  # no version was used


def test_duplicate_keys_inside_one_statement_and_across_sinks(items):
    with pytest.raises(ConstraintViolationError):
        items.merge("items", [(INSERT, {"id": 7}, None)], [(INSERT, {"id": 7}, None)])
    assert [r["id"] for r in items.read("items")] == [1, 2, 3]


def test_deleted_key_may_be_inserted_again(items):
    items.delete("items", {"id": 2}, {"id": 2, "name": "b", "qty": 20})
    items.insert("items", {"id": 2, "name": "again", "qty": 1})
    assert items.read("items")[1] == {"id": 2, "name": "again", "qty": 1}
    journal = items.read("items_journal", sort=["version_number"])
    assert [(r["id"], r["version_number"], r["subsequent_version_number"]) for r in journal if r["id"] == 2] == [
        (2, 1, None),
        (2, 2, 2),
        (2, 3, None),
    ]


def test_null_key_is_rejected(items):
    with pytest.raises(ConstraintViolationError, match="NULL value not allowed in key column id"):
        items.insert("items", {"id": None, "name": "x"})


def test_update_of_key_column_moves_the_row(items):
    # J34 decided: UPDATE depts SET deptno = 40 WHERE deptno = 4 leaves 40 live and 4 gone.
    items.merge("items", [(UPDATE, {"id": 40, "name": "c", "qty": 30}, {"id": 3})], update_columns=["id"])
    assert [r["id"] for r in items.read("items")] == [1, 2, 40]
    journal = items.read("items_journal", sort=["version_number", "id"])
    moved = [
        (r["id"], r["version_number"], r["subsequent_version_number"]) for r in journal if r["version_number"] == 2
    ]
    assert moved == [(3, 2, 2), (40, 2, None)]  # tombstone under the old key, version under the new one


def test_key_move_onto_live_key_is_rejected_but_swap_is_allowed(items):
    with pytest.raises(ConstraintViolationError):
        items.merge("items", [(UPDATE, {"id": 2, "name": "a"}, {"id": 1})], update_columns=["id"])
    # Swapping two keys in one statement: each arrival finds its key departing in the same statement.
    items.merge(
        "items",
        [
            (UPDATE, {"id": 2, "name": "a", "qty": 10}, {"id": 1}),
            (UPDATE, {"id": 1, "name": "b", "qty": 20}, {"id": 2}),
        ],
        update_columns=["id"],
    )
    assert [(r["id"], r["name"]) for r in items.read("items")] == [(1, "b"), (2, "a"), (3, "c")]


def test_merge_with_all_operations_writes_one_version(items):
    items.merge(
        "items",
        [
            (UPDATE, {"id": 1, "name": "a2", "qty": 11}, {"id": 1}),
            (DELETE, {"id": 2, "name": "b", "qty": 20}, {"id": 2}),
        ],
        [(INSERT, {"id": 4, "name": "d", "qty": 40}, None)],
        update_columns=["name", "qty"],
    )
    assert items.read("items") == [
        {"id": 1, "name": "a2", "qty": 11},
        {"id": 3, "name": "c", "qty": 30},
        {"id": 4, "name": "d", "qty": 40},
    ]
    assert sorted(r["id"] for r in items.read("items_journal") if r["version_number"] == 2) == [1, 2, 4]
    assert items.handle("items").snapshot_seq == 2


def test_versions_increase_strictly_per_commit(items):
    for i in range(3):
        items.update("items", {"id": 1}, {"id": 1, "name": f"v{i}", "qty": i})
    versions = sorted(r["version_number"] for r in items.read("items_journal") if r["id"] == 1)
    assert versions == [1, 2, 3, 4]
    hidden = items.read("items", ["id", "version_number"])
    assert hidden == [{"id": 1, "version_number": 4}, {"id": 2, "version_number": 1}, {"id": 3, "version_number": 1}]


def test_filters_apply_after_latest_version_selection(items):
    # J31's pitfall: a row whose latest version left the filter must not come back through an old one.
    items.update("items", {"id": 1}, {"id": 1, "name": "a", "qty": 99})
    rows, _ = items.scan(items.handle("items"), ["id", "qty"])
    assert sorted(r["id"] for r in rows if r["qty"] == 10) == []
    assert sorted((r["id"], r["qty"]) for r in rows) == [(1, 99), (2, 20), (3, 30)]


def test_composite_key(make_harness):
    lake = make_harness()
    lake.create("emp", [("dept", pa.string()), ("no", pa.int32()), ("name", pa.string())], key=["dept", "no"])
    lake.insert(
        "emp",
        {"dept": "a", "no": 1, "name": "x"},
        {"dept": "a", "no": 2, "name": "y"},
        {"dept": "b", "no": 1, "name": "z"},
    )
    lake.update("emp", {"dept": "a", "no": 2}, {"dept": "a", "no": 2, "name": "y2"})
    with pytest.raises(ConstraintViolationError, match=r"\(dept, no\)=\('b', 1\)"):
        lake.insert("emp", {"dept": "b", "no": 1, "name": "dup"})
    lake.insert("emp", {"dept": "b", "no": 2, "name": "w"})
    assert [(r["dept"], r["no"], r["name"]) for r in lake.read("emp", sort=["dept", "no"])] == [
        ("a", 1, "x"),
        ("a", 2, "y2"),
        ("b", 1, "z"),
        ("b", 2, "w"),
    ]


def test_table_without_key_gets_hidden_row_ids(lake):
    lake.create("logs", [("msg", pa.string())])
    lake.insert("logs", {"msg": "a"}, {"msg": "a"}, {"msg": "b"})
    meta = lake.metadata.get_table_metadata(session=lake.session(), table_handle=lake.handle("logs"))
    assert [c.name for c in meta.columns if not c.hidden] == ["msg"]
    rows = lake.read("logs", ["msg", "_row_id"], sort=["_row_id"])
    assert len({r["_row_id"] for r in rows}) == 3
    # UPDATE and DELETE address rows by the hidden id, even with equal business values.
    first, second = rows[0]["_row_id"], rows[1]["_row_id"]
    lake.merge(
        "logs",
        [(UPDATE, {"msg": "a!"}, {"_row_id": first}), (DELETE, {"msg": "a"}, {"_row_id": second})],
        update_columns=["msg"],
    )
    assert sorted(r["msg"] for r in lake.read("logs")) == ["a!", "b"]
    lake.insert("logs", {"msg": "c"})
    ids = [r["_row_id"] for r in lake.read("logs", ["_row_id"])]
    assert len(set(ids)) == 3


def test_row_id_column_is_a_struct_of_the_key(items):
    h = items.handle("items")
    row_id = items.metadata.get_merge_row_id_column_handle(session=items.session(), table_handle=h)
    assert row_id.type == pa.struct([pa.field("id", pa.int64())])
    rows, _ = items.scan(h, [row_id.name, "name"])
    assert sorted(r[row_id.name]["id"] for r in rows) == [1, 2, 3]


def test_raw_journal_inserts_follow_the_seed_fixtures(make_harness):
    # J01's setup writes versions straight into emps_journal; <t> then shows the latest live version per key.
    lake = make_harness(version_type="bigint", journal_tables={"emps": ["empid"]})
    lake.create(
        "emps_journal",
        [
            ("empid", pa.int32()),
            ("deptno", pa.int32()),
            *VERSION_COLUMNS,
            ("first_name", pa.string()),
            ("last_name", pa.string()),
        ],
    )

    def raw(*rows):
        lake.merge(
            "emps_journal",
            [
                (
                    INSERT,
                    dict(
                        zip(
                            [
                                "empid",
                                "deptno",
                                "version_number",
                                "subsequent_version_number",
                                "first_name",
                                "last_name",
                            ],
                            r,
                            strict=False,
                        )
                    ),
                    None,
                )
                for r in rows
            ],
        )

    raw(
        (1, 1, 1, None, "Peter", "Pan"),
        (2, 1, 1, None, "Ian", "Bibian"),
        (3, 2, 1, None, "Victor", "Strugatski"),
        (4, 2, 1, None, "Stan", "Ban"),
        (5, 2, 1, None, "Dimitar", "Gergov"),
        (6, 4, 1, None, "Ivan", "Baraban"),
    )
    raw((1, 2, 2, None, "Peter", "Pan"))
    raw((5, 2, 2, 2, "Dimitar", "Gergov"))
    assert [r["empid"] for r in lake.read("emps", ["empid"])] == [1, 2, 3, 4, 6]  # J01
    assert sorted(r["empid"] for r in lake.read("emps") if r["deptno"] == 1) == [2]  # J31
    assert len(lake.read("emps_journal")) == 8  # J40
    # A later native UPDATE gets a version above every explicit one.
    lake.update("emps", {"empid": 2}, {"empid": 2, "deptno": 3, "first_name": "Ian", "last_name": "B"})
    assert max(r["version_number"] for r in lake.read("emps_journal")) > 2
    assert [r["empid"] for r in lake.read("emps") if r["deptno"] == 3] == [2]
    with pytest.raises(MergekitError, match="only accepts INSERT"):
        lake.begin("emps_journal", update_columns=["deptno"])
