"""A harness that drives the journal connector through the SPI alone: no Spark, no engine.

``JournalHarness`` plays the engine's part: it builds merge pages laid out as ``MERGE_PAGE_LAYOUT``,
feeds them to one or more sinks, commits through ``finish_merge`` and reads back through ``get_splits``
and page sources, pickling splits, handles and providers on the way as Spark would.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from mergekit_journal import JournalConnectorFactory

from mergekit import plugins
from mergekit.spi import (
    ALL,
    MERGE_PAGE_LAYOUT,
    ColumnMetadata,
    ConnectorSession,
    ConnectorTableMetadata,
    Constraint,
    SchemaTableName,
    StreamDefinition,
    TableVersion,
)

INSERT, DELETE, UPDATE = 1, 2, 3

# A journal table's own version columns as the seed's fixtures declare them (bigint), for ``create``.
VERSION_COLUMNS = (("version_number", pa.int64(), "bigint"), ("subsequent_version_number", pa.int64(), "bigint"))


def name(text: str) -> SchemaTableName:
    schema, _, table = text.rpartition(".")
    return SchemaTableName(schema=schema or "default", table=table)


class JournalHarness:
    def __init__(self, warehouse: str, **options: Any) -> None:
        self.warehouse = warehouse
        self.options = options
        self.connector = JournalConnectorFactory().create(
            catalog_name="lake", config={"warehouse": warehouse, **options}, context=plugins.connector_context()
        )
        self.metadata = self.connector.get_metadata()

    @classmethod
    def over(cls, connector: Any, warehouse: str) -> JournalHarness:
        """A harness driving another connector built on the journal (the partitioned one) with the same calls."""
        h = cls.__new__(cls)
        h.warehouse, h.options, h.connector = warehouse, {}, connector
        h.metadata = connector.get_metadata()
        return h

    def session(self) -> ConnectorSession:
        return ConnectorSession(catalog="lake")

    # -- DDL ----------------------------------------------------------------------------------------

    def create(
        self,
        table: str,
        columns: Sequence[tuple[str, pa.DataType] | tuple[str, pa.DataType, str]],
        key: Sequence[str] = (),
    ) -> None:
        cols = []
        for c in columns:
            cols.append(ColumnMetadata(name=c[0], type=c[1], type_name=c[2] if len(c) > 2 else None))
        self.metadata.create_table(
            session=self.session(),
            table_metadata=ConnectorTableMetadata(table=name(table), columns=cols, primary_key=tuple(key)),
            ignore_existing=False,
        )

    def create_stream(
        self,
        table: str,
        columns: Sequence[tuple[str, pa.DataType]],
        stream: StreamDefinition,
        key: Sequence[str] = (),
    ) -> None:
        cols = [ColumnMetadata(name=c[0], type=c[1]) for c in columns]
        self.metadata.create_table(
            session=self.session(),
            table_metadata=ConnectorTableMetadata(
                table=name(table), columns=cols, primary_key=tuple(key), stream=stream
            ),
            ignore_existing=False,
        )

    def handle(self, table: str, version: TableVersion | None = None) -> Any:
        h = self.metadata.get_table_handle(session=self.session(), table=name(table), version=version)
        assert h is not None, table
        return h

    # -- writes ---------------------------------------------------------------------------------------

    def page(
        self, handle: Any, rows: Sequence[tuple[int, Mapping[str, Any], Mapping[str, Any] | None]]
    ) -> pa.RecordBatch:
        meta = self.metadata.get_table_metadata(session=self.session(), table_handle=handle)
        visible = [c for c in meta.columns if not c.hidden]
        row_id = self.metadata.get_merge_row_id_column_handle(session=self.session(), table_handle=handle)
        schema = MERGE_PAGE_LAYOUT.schema(pa.schema([pa.field(c.name, c.type) for c in visible]), row_id.type)
        arrays = [pa.array([r[1].get(c.name) for r in rows], c.type) for c in visible]
        arrays.append(pa.array([r[0] for r in rows], pa.int8()))
        arrays.append(pa.array([0 for _ in rows], pa.int32()))
        arrays.append(pa.array([r[2] for r in rows], row_id.type))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    def begin(self, table: str, handle: Any = None, update_columns: Sequence[str] = ()) -> Any:
        handle = handle or self.handle(table)
        cases = {}
        if update_columns:
            cols = self.metadata.get_column_handles(session=self.session(), table_handle=handle)
            cases = {0: [cols[c] for c in update_columns]}
        self.metadata.get_row_change_paradigm(session=self.session(), table_handle=handle)
        return self.metadata.begin_merge(session=self.session(), table_handle=handle, update_case_columns=cases)

    def write(self, merge_handle: Any, *sink_rows: Sequence[Any]) -> list[Any]:
        """Run one sink per argument (each a list of rows); returns all fragments."""
        provider = pickle.loads(pickle.dumps(self.connector.get_page_sink_provider()))
        shipped = pickle.loads(pickle.dumps(merge_handle))
        fragments: list[Any] = []
        for sink_id, rows in enumerate(sink_rows):
            sink = provider.create_merge_sink(session=self.session(), merge_handle=shipped, sink_id=sink_id)
            if rows:
                sink.store_merged_rows(self.page(merge_handle.table_handle, rows))
            fragments.extend(pickle.loads(pickle.dumps(list(sink.finish()))))
        return fragments

    def finish(self, merge_handle: Any, fragments: Sequence[Any]) -> None:
        self.metadata.finish_merge(session=self.session(), merge_handle=merge_handle, fragments=fragments)

    def merge(self, table: str, *sink_rows: Sequence[Any], update_columns: Sequence[str] = ()) -> Any:
        mh = self.begin(table, update_columns=update_columns)
        try:
            self.finish(mh, self.write(mh, *sink_rows))
        except BaseException:
            self.metadata.abort_merge(session=self.session(), merge_handle=mh)
            raise
        return mh

    def insert(self, table: str, *rows: Mapping[str, Any]) -> None:
        self.merge(table, [(INSERT, r, None) for r in rows])

    def update(self, table: str, key: Mapping[str, Any], new_row: Mapping[str, Any]) -> None:
        self.merge(table, [(UPDATE, new_row, key)], update_columns=list(new_row))

    def delete(self, table: str, key: Mapping[str, Any], old_row: Mapping[str, Any] | None = None) -> None:
        self.merge(table, [(DELETE, old_row or dict(key), key)])

    # -- reads ----------------------------------------------------------------------------------------

    def scan(
        self, handle: Any, columns: Sequence[str] | None = None, constraint: Constraint = ALL
    ) -> tuple[list[dict], int]:
        meta = self.metadata.get_table_metadata(session=self.session(), table_handle=handle)
        handles = dict(self.metadata.get_column_handles(session=self.session(), table_handle=handle))
        row_id = self.metadata.get_merge_row_id_column_handle(session=self.session(), table_handle=handle)
        handles[row_id.name] = row_id
        names = list(columns) if columns is not None else [c.name for c in meta.columns if not c.hidden]
        cols = [handles[n] for n in names]
        splits = self.connector.get_split_manager().get_splits(
            session=self.session(), table_handle=handle, columns=cols, constraint=constraint
        )
        provider = pickle.loads(pickle.dumps(self.connector.get_page_source_provider()))
        rows: list[dict] = []
        for split in splits:
            split = pickle.loads(pickle.dumps(split))
            source = provider.create_page_source(
                session=self.session(), split=split, table_handle=pickle.loads(pickle.dumps(handle)), columns=cols
            )
            try:
                for batch in source:
                    assert batch.schema.names == names
                    assert [f.type for f in batch.schema] == [c.type for c in cols]
                    rows.extend(batch.to_pylist())
            finally:
                source.close()
        return rows, len(splits)

    def read(
        self,
        table: str,
        columns: Sequence[str] | None = None,
        version: TableVersion | None = None,
        sort: Sequence[str] | None = None,
    ) -> list[dict]:
        rows, _ = self.scan(self.handle(table, version), columns)
        key = sort or list(rows[0]) if rows else []
        return sorted(rows, key=lambda r: tuple((r[k] is None, r[k]) for k in key))

    def splits(self, table: str) -> list[Any]:
        h = self.handle(table)
        return list(
            self.connector.get_split_manager().get_splits(
                session=self.session(), table_handle=h, columns=[], constraint=ALL
            )
        )

    def stream_commits(self, table: str, after: int | None = None, up_to: int | None = None) -> list[Any]:
        return list(
            self.metadata.get_stream_commits(
                session=self.session(), table_handle=self.handle(table), after=after, up_to=up_to
            )
        )

    def stream_rows(
        self, table: str, after: int | None, up_to: int, columns: Sequence[str] | None = None
    ) -> list[dict]:
        """The rows of commits ``after < version <= up_to`` in the order the stream's splits give them (splits,
        handle and provider pickled as Spark would)."""
        handle = self.handle(table)
        meta = self.metadata.get_table_metadata(session=self.session(), table_handle=handle)
        handles = self.metadata.get_column_handles(session=self.session(), table_handle=handle)
        cols = [handles[n] for n in (columns or [c.name for c in meta.columns if not c.hidden])]
        splits = self.metadata.get_stream_splits(
            session=self.session(), table_handle=handle, columns=cols, after=after, up_to=up_to
        )
        provider = pickle.loads(pickle.dumps(self.connector.get_page_source_provider()))
        rows: list[dict] = []
        for split in pickle.loads(pickle.dumps(list(splits))):
            source = provider.create_page_source(
                session=self.session(), split=split, table_handle=pickle.loads(pickle.dumps(handle)), columns=cols
            )
            try:
                for batch in source:
                    rows.extend(batch.to_pylist())
            finally:
                source.close()
        return rows

    def call(self, procedure: str, **args: Any) -> Any:
        return self.connector.get_procedures()[procedure](session=self.session(), **args)


__all__ = ["JournalHarness", "name", "INSERT", "DELETE", "UPDATE"]
