"""The seed's four hr.depts examples (calcite-sql-rewriter README), checked on depts_journal after each one."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from mergekit.errors import ErrorCode, MergekitError
from tests.journal.journal_harness import DELETE, INSERT, UPDATE, VERSION_COLUMNS

JOURNAL = ["deptno", "department_name", "version_number", "subsequent_version_number"]


def _create_seed_journal(lake, version_type: str) -> None:
    # The seed's DDL: the journal table itself, metadata columns in the middle, PK (key, version_number).
    lake.create(
        "hr.depts_journal",
        [
            ("deptno", pa.int32(), "integer"),
            ("version_number", pa.int64() if version_type == "bigint" else pa.timestamp("us", tz="UTC"), version_type),
            (
                "subsequent_version_number",
                pa.int64() if version_type == "bigint" else pa.timestamp("us", tz="UTC"),
                version_type,
            ),
            ("department_name", pa.string(), "varchar"),
        ],
        key=["deptno", "version_number"],
    )


@pytest.mark.parametrize("version_type", ["timestamp with time zone", "bigint"])
def test_seed_examples_on_hr_depts(make_harness, version_type):
    lake = make_harness(version_type=version_type)
    _create_seed_journal(lake, version_type)
    meta = lake.metadata.get_table_metadata(session=lake.session(), table_handle=lake.handle("hr.depts"))
    assert meta.primary_key == ("deptno",)
    assert [c.name for c in meta.columns if not c.hidden] == ["deptno", "department_name"]
    journal_meta = lake.metadata.get_table_metadata(
        session=lake.session(), table_handle=lake.handle("hr.depts_journal")
    )
    # The journal keeps the declared column order (the seed lets the metadata columns sit anywhere).
    assert [c.name for c in journal_meta.columns] == [
        "deptno",
        "version_number",
        "subsequent_version_number",
        "department_name",
    ]

    # 1. INSERT INTO hr.depts (deptno, department_name) VALUES (666, 'Pivotal')
    lake.merge("hr.depts", [(INSERT, {"deptno": 666, "department_name": "Pivotal"}, None)])
    j1 = lake.read("hr.depts_journal", JOURNAL, sort=["version_number"])
    assert [(r["deptno"], r["department_name"], r["subsequent_version_number"]) for r in j1] == [(666, "Pivotal", None)]
    v1 = j1[0]["version_number"]

    # 2. UPDATE hr.depts SET department_name='New Name' WHERE deptno = 666: a new version, old one untouched
    lake.merge(
        "hr.depts",
        [(UPDATE, {"deptno": 666, "department_name": "New Name"}, {"deptno": 666})],
        update_columns=["department_name"],
    )
    j2 = lake.read("hr.depts_journal", JOURNAL, sort=["version_number"])
    assert [(r["deptno"], r["department_name"], r["subsequent_version_number"]) for r in j2] == [
        (666, "Pivotal", None),
        (666, "New Name", None),
    ]
    v2 = j2[1]["version_number"]
    assert j2[0]["version_number"] == v1 and v2 > v1

    # 4. SELECT * FROM hr.depts: the latest live version per key
    assert lake.read("hr.depts") == [{"deptno": 666, "department_name": "New Name"}]

    # 3. DELETE FROM hr.depts WHERE deptno=666: a tombstone copying the latest row, version = subsequent
    lake.merge("hr.depts", [(DELETE, {"deptno": 666, "department_name": "New Name"}, {"deptno": 666})])
    j3 = lake.read("hr.depts_journal", JOURNAL, sort=["version_number"])
    assert [(r["deptno"], r["department_name"]) for r in j3] == [(666, "Pivotal"), (666, "New Name"), (666, "New Name")]
    assert [r["subsequent_version_number"] for r in j3[:2]] == [None, None]
    v3 = j3[2]["version_number"]
    assert v3 > v2 and j3[2]["subsequent_version_number"] == v3
    assert lake.read("hr.depts") == []

    if version_type == "bigint":
        assert (v1, v2, v3) == (1, 2, 3)
    else:
        assert all(isinstance(v, dt.datetime) and v.tzinfo is not None for v in (v1, v2, v3))


def test_plain_create_table_gets_journal_with_trailing_version_fields(lake):
    lake.create("depts", [("deptno", pa.int32()), ("department_name", pa.string())], key=["deptno"])
    lake.insert("depts", {"deptno": 696})  # J07: unspecified columns are NULL, subsequent is NULL
    rows = lake.read("depts_journal")
    assert list(rows[0]) == JOURNAL
    assert rows[0]["deptno"] == 696 and rows[0]["department_name"] is None
    assert rows[0]["subsequent_version_number"] is None
    names = lake.metadata.list_tables(session=lake.session(), schema="default")
    assert {str(n) for n in names} == {"default.depts", "default.depts_journal"}


def test_version_type_mismatch_rejects_update_and_delete(make_harness):
    # J16/J22: the journal declares BIGINT versions, the catalog says TIMESTAMP.
    lake = make_harness(version_type="TIMESTAMP")
    _create_seed_journal(lake, "bigint")
    lake.insert("hr.depts", {"deptno": 3, "department_name": "Dep3"})  # INSERT is not checked (as in the seed)
    with pytest.raises(MergekitError, match="Incorrect journalVersionType") as err:
        lake.update("hr.depts", {"deptno": 3}, {"deptno": 3, "department_name": "First"})
    assert err.value.code == ErrorCode.TYPE_MISMATCH
    assert lake.read("hr.depts") == [{"deptno": 3, "department_name": "Dep3"}]


def test_listed_table_without_key_is_rejected(make_harness):
    # J37: journal_tables lists the table with no key and there is no default key.
    lake = make_harness(journal_tables={"items": None})
    with pytest.raises(MergekitError, match="No primary key given for table: items"):
        lake.create("items_journal", [("id", pa.int32()), ("name", pa.string()), *VERSION_COLUMNS])


def test_config_errors_use_the_seed_messages(make_harness):
    with pytest.raises(MergekitError, match="Unknown version type: nope"):
        make_harness(version_type="nope")
    with pytest.raises(MergekitError, match="journalTables entry is invalid or missing"):
        make_harness(journal_tables=42)


def test_key_from_journal_tables_and_default_key(make_harness):
    lake = make_harness(journal_tables={"emps": ["empid"]}, default_key=["id"], version_type="bigint")
    lake.create("emps_journal", [("empid", pa.int32()), ("deptno", pa.int32()), *VERSION_COLUMNS])
    lake.create("things", [("id", pa.int64()), ("v", pa.string())])
    for t, key in (("emps", ("empid",)), ("things", ("id",))):
        meta = lake.metadata.get_table_metadata(session=lake.session(), table_handle=lake.handle(t))
        assert meta.primary_key == key
