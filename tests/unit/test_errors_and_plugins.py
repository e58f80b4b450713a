from __future__ import annotations

import pickle

import pytest

from mergekit import plugins
from mergekit.errors import ErrorCode, MergekitError, NotSupportedError, TableNotFoundError, find_error
from mergekit.spi import (
    MODIFYING_ROWS_MESSAGE,
    Connector,
    ConnectorFactory,
    ConnectorMetadata,
    ConnectorSession,
    ConnectorTableHandle,
    SchemaTableName,
)
from mergekit.sql import parse_statement


def test_error_codes_are_unique() -> None:
    numbers = [c.number for c in ErrorCode]
    assert len(numbers) == len(set(numbers))


def test_error_str_starts_with_code_and_subclasses_builtins() -> None:
    err = MergekitError(ErrorCode.TABLE_NOT_FOUND, "Table 'x' does not exist")
    assert isinstance(err, TableNotFoundError) and isinstance(err, LookupError)
    assert str(err) == "[TABLE_NOT_FOUND] Table 'x' does not exist"
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is TableNotFoundError and again.code is ErrorCode.TABLE_NOT_FOUND
    assert isinstance(MergekitError(ErrorCode.NOT_SUPPORTED, "x"), NotImplementedError)


def test_find_error_recovers_codes_from_worker_tracebacks() -> None:
    text = "Traceback ...\nmergekit.errors.MergekitError: [CONSTRAINT_VIOLATION] NULL value not allowed for NOT NULL column: c SQLSTATE: P0001\n"
    err = find_error(text)
    assert err is not None and err.code is ErrorCode.CONSTRAINT_VIOLATION
    assert err.message == "NULL value not allowed for NOT NULL column: c"


def test_syntax_error_has_line_and_column() -> None:
    with pytest.raises(MergekitError) as info:
        parse_statement("SELECT *\nFROM t WHERE")
    assert info.value.code is ErrorCode.SYNTAX_ERROR
    assert (info.value.line, info.value.column) > (0, 0)
    assert str(info.value).startswith("[SYNTAX_ERROR] line 2:")


def test_optional_spi_capabilities_raise_not_supported() -> None:
    class Minimal(ConnectorMetadata):  # only the three required (abstract) methods
        def list_tables(self, *, session, schema):  # type: ignore[no-untyped-def]
            return []

        def get_table_handle(self, *, session, table, version=None):  # type: ignore[no-untyped-def]
            return None

        def get_table_metadata(self, *, session, table_handle):  # type: ignore[no-untyped-def]
            raise AssertionError

    meta = Minimal()
    handle = ConnectorTableHandle(table=SchemaTableName(schema="s", table="t"))
    with pytest.raises(NotSupportedError, match=MODIFYING_ROWS_MESSAGE):
        meta.get_row_change_paradigm(session=ConnectorSession(), table_handle=handle)
    with pytest.raises(NotSupportedError, match=MODIFYING_ROWS_MESSAGE):
        meta.begin_merge(session=ConnectorSession(), table_handle=handle, update_case_columns={})
    with pytest.raises(MergekitError) as info:
        meta.finish_merge(session=ConnectorSession(), merge_handle=None, fragments=[])  # type: ignore[arg-type]
    assert info.value.code is ErrorCode.GENERIC_INTERNAL_ERROR


def test_memory_connector_is_found_through_its_entry_point() -> None:
    assert plugins.available()["memory"] == "mergekit-memory"
    factory = plugins.get_factory("memory")
    assert factory.name == "memory"


def test_unknown_connector_and_duplicate_registration() -> None:
    with pytest.raises(MergekitError) as info:
        plugins.get_factory("nope")
    assert info.value.code is ErrorCode.CONNECTOR_NOT_FOUND

    class Factory(ConnectorFactory):
        name = "unit-test-connector"

        def create(self, *, catalog_name, config) -> Connector:  # type: ignore[no-untyped-def]
            raise AssertionError

    plugins.register(Factory())
    try:
        assert plugins.get_factory("unit-test-connector").name == "unit-test-connector"
        with pytest.raises(MergekitError) as dup:
            plugins.register(Factory())
        assert dup.value.code is ErrorCode.PLUGIN_LOAD_ERROR
    finally:
        plugins.unregister("unit-test-connector")
    with pytest.raises(MergekitError):
        plugins.register(object())  # type: ignore[arg-type]


def test_errors_page_is_generated_from_the_enum() -> None:
    from pathlib import Path

    from mergekit.errors import errors_markdown

    page = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
    assert page.read_text() == errors_markdown(), "regenerate with: python -m mergekit.errors > docs/errors.md"
