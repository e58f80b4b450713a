"""The read side of the SPI: splits, page sources and the optional native Spark scan.

The engine reads a connector table for queries and for the target scan of MERGE, UPDATE and DELETE:

1. Driver: ``ConnectorSplitManager.get_splits(session=..., table_handle=..., columns=..., constraint=...)``
   returns picklable splits (units of parallel work).
2. Executors: for each split, ``ConnectorPageSourceProvider.create_page_source(...)`` returns a page source;
   the engine iterates its pages (Arrow record batches with exactly the requested columns, in order) and
   closes it.

A connector whose data Spark can read by itself may instead return a :class:`NativeScan` from
``ConnectorMetadata.get_native_scan``: the engine then asks Spark to read the files directly (with Spark's
own vectorised reader, column pruning and filter pushdown) and skips the split path. A
:class:`NativeScanUnion` mixes both: native scans for most files (with an :class:`AntiJoin` to drop rows
that later files supersede) and splits for the rest.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa

from ._model import ColumnHandle, ConnectorSession, ConnectorTableHandle

__all__ = [
    "ConnectorSplit",
    "Constraint",
    "ConnectorSplitManager",
    "ConnectorPageSource",
    "ConnectorPageSourceProvider",
    "NativeScan",
    "AntiJoin",
    "NativeScanUnion",
    "ConnectorIndexHandle",
    "ConnectorResolvedIndex",
    "ConnectorIndex",
    "ConnectorIndexProvider",
]


def _tuple(values: Iterable[Any]) -> tuple[Any, ...]:
    """Typed converter for attrs tuple fields (``converter=tuple`` defeats type checkers)."""
    return tuple(values)


@attrs.frozen(kw_only=True)
class ConnectorSplit:
    """Base of a connector's splits. Subclasses add what a page source needs (file paths, row ranges...).

    Returned by ``get_splits`` on the driver and pickled (cloudpickle) to the executor task that reads it;
    one split is read by one page source. Keep splits small (paths and ranges, not rows): the engine
    distributes them as rows of a Spark DataFrame.
    """


@attrs.frozen(kw_only=True)
class Constraint:
    """Predicates the engine knows hold for every row it wants, for pruning. ``equalities`` maps a column
    name to the set of values it may take (from ``col = v`` / ``col IN (...)``); ``ranges`` maps a column
    name to ``(low, high)`` inclusive bounds, either None. ``value_sets`` is ``equalities`` for sets too
    large for Python objects (a MERGE source's keys: up to millions): the values a column may take as an
    Arrow array, sorted, distinct, without nulls, of the type the engine compares them in (cast it to the
    column's type). A connector may ignore a constraint: the engine filters again, unless the scan says it
    enforced it (:attr:`NativeScanUnion.enforced`)."""

    # Values are Python scalars as the engine evaluated the statement's literals (int, str, Decimal, date,
    # datetime, bool, bytes): ``Any``, because a column's values may be of a wider type than the column.
    equalities: Mapping[str, frozenset[Any]] = attrs.field(factory=dict)
    ranges: Mapping[str, tuple[Any, Any]] = attrs.field(factory=dict)
    value_sets: Mapping[str, pa.Array] = attrs.field(factory=dict)


# No constraint: every row is wanted (the default of ``get_native_scan``; what a query without WHERE passes).
ALL = Constraint()


class ConnectorSplitManager(abc.ABC):
    """Cuts a scan into splits, on the driver. Returned by ``Connector.get_split_manager``."""

    @abc.abstractmethod
    def get_splits(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        columns: Sequence[ColumnHandle],
        constraint: Constraint,
    ) -> Sequence[ConnectorSplit]:
        """Called on the driver, once per scan. Returns picklable splits; an empty table may return none.

        Called for every scan that ``ConnectorMetadata.get_native_scan`` did not take over (it returned None):
        queries, the target scan of UPDATE, DELETE and MERGE (with the row id column among ``columns``), and
        ``table_changes`` handles. ``columns`` are the handles the page sources must yield, in order;
        ``constraint`` is a pruning hint (the engine filters the rows again), so a connector may ignore it.
        Each split becomes one task's work: many small splits cost scheduling, one split costs parallelism."""


class ConnectorPageSource(abc.ABC):
    """Reads one split on an executor. Iterate it for pages; ``close`` is always called.

    Created by ``ConnectorPageSourceProvider.create_page_source``; the engine iterates it once, then calls
    :meth:`close` (also when iterating raised or the task was cancelled).
    """

    @abc.abstractmethod
    def __iter__(self) -> Iterator[pa.RecordBatch]:
        """Yields record batches with exactly the requested columns, in the requested order.

        The engine selects the requested columns by name and casts each to its handle's type, so a batch
        with extra columns or a compatible type still works, at the cost of a copy. Empty batches are
        skipped. Raising fails the statement (a ``MergekitError`` keeps its code)."""

    def close(self) -> None:
        """Release files and connections. Called exactly once, after iteration ended or failed. Default:
        nothing to release."""


class ChainedPageSource(ConnectorPageSource):
    """The pages of several page sources, one after the other; each is closed once it is read (or fails).

    For a connector whose one request reads several splits' worth of rows, e.g. ``ConnectorIndex.lookup``
    answering many keys through several reads. Sources not reached are never opened: their ``close`` is not
    called, so they must open files and connections lazily, in ``__iter__``."""

    def __init__(self, sources: Sequence[ConnectorPageSource]) -> None:
        self._sources = list(sources)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        for source in self._sources:
            try:
                yield from source
            finally:
                source.close()


class ConnectorPageSourceProvider(abc.ABC):
    """Must be picklable: the engine ships it to executors.

    Returned by ``Connector.get_page_source_provider`` on the driver, once per scan, and pickled into the
    Spark job with the session, the table handle and the column handles.
    """

    @abc.abstractmethod
    def create_page_source(
        self,
        *,
        session: ConnectorSession,
        split: ConnectorSplit,
        table_handle: ConnectorTableHandle,
        columns: Sequence[ColumnHandle],
    ) -> ConnectorPageSource:
        """Called on an executor, once per split.

        ``split`` is one of those ``get_splits`` (or a :class:`NativeScanUnion`) returned; ``table_handle``
        the handle the scan was planned with; ``columns`` the handles to yield, in order. For the target scan
        of a DML statement they include the row id handle. Open files here or lazily in ``__iter__``."""


@attrs.frozen(kw_only=True)
class NativeScan:
    """A scan Spark performs itself: ``spark.read.format(format).options(**options).schema(schema).load(paths)``.

    ``schema`` names the columns the files hold; the engine projects the requested columns from it, each
    by name unless ``projections`` gives a Spark SQL expression over the file columns for it (e.g. a row id
    built from key columns: ``{"$row_id": "named_struct('id', id)"}``). ``paths`` may be empty (no rows).
    ``row_filter``, when set, is a SQL predicate over the file columns (Spark SQL syntax) that the engine
    applies before anything else, e.g. to drop deleted rows. ``anti_join``, when set, drops every row whose
    key columns occur in another scan's rows (rows superseded by later files), after ``row_filter``.

    Returned by ``ConnectorMetadata.get_native_scan`` on the driver; the engine turns it into a Spark
    DataFrame read, so no Python worker runs for it. ``paths`` must be readable by Spark on every executor
    (absolute local paths on one machine, ``s3a://`` / ``hdfs://`` URIs on a cluster).
    """

    format: str
    paths: tuple[str, ...] = attrs.field(converter=_tuple)
    schema: pa.Schema
    options: Mapping[str, str] = attrs.field(factory=dict)
    row_filter: str | None = None
    projections: Mapping[str, str] = attrs.field(factory=dict)
    anti_join: AntiJoin | None = None


@attrs.frozen(kw_only=True)
class AntiJoin:
    """Drop the rows of a :class:`NativeScan` whose ``keys`` (file columns, compared with ``=``) occur in
    ``scan``'s rows. Only ``keys`` are read from ``scan`` (its ``projections`` are ignored); its
    ``row_filter`` applies. The engine picks the join strategy (a broadcast when ``scan`` is small or
    ``broadcast`` says so)."""

    keys: tuple[str, ...] = attrs.field(converter=_tuple)
    scan: NativeScan
    broadcast: bool = False
    """The connector knows ``scan`` holds few rows (its catalog counts them): broadcast them to every task of
    the anti join whatever Spark estimates from file sizes (else a growing ``scan`` flips the join to a shuffle
    of the whole table)."""


@attrs.frozen(kw_only=True)
class NativeScanUnion:
    """A table read as the union of native scans and of splits read through the connector's page source
    (for the part Spark cannot read by itself). Every part yields the requested columns; the union has
    exactly the rows of the table (the parts must not overlap)."""

    scans: tuple[NativeScan, ...] = attrs.field(converter=_tuple)
    splits: tuple[ConnectorSplit, ...] = attrs.field(converter=_tuple, default=())
    enforced: frozenset[str] = attrs.field(converter=frozenset, default=frozenset())
    """Columns whose ``equalities`` / ``value_sets`` constraint every row of the union satisfies (the connector
    filtered by exactly those values, as Trino's ``ConstraintApplicationResult`` leaves no remaining filter):
    the engine then skips its own filtering by them (MERGE: the semi join of the target on the source's
    keys)."""


# ---- index lookups (Trino's ConnectorIndex): a MERGE finds its target rows by key, per task, instead of
# scanning the whole target. The engine calls resolve_index on the driver, then get_index and lookup on the
# executors that join each share of the source. -------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ConnectorIndexHandle:
    """Base of a connector's resolved index: what an executor needs to look rows up (picklable).

    Connectors subclass it (frozen attrs) with the snapshot and the files to search."""


@attrs.frozen(kw_only=True)
class ConnectorResolvedIndex:
    """An index the connector offers on some columns of a table (Trino's ``ConnectorResolvedIndex``).

    ``partition_points``: sorted values of the first index column where the engine may cut the key space so
    that lookups of keys in different ranges read different data (the journal: boundaries between files'
    key ranges), each range about the same cost; the engine sends the keys of one range to one task. Empty:
    no preference (the engine then spreads keys by hash). ``key_range``: ``(low, high)`` bounds of the first
    index column over every row, when known: keys outside find nothing and read nothing (a MERGE's new
    keys), so the engine spreads them over all tasks instead of loading the first or last range with them."""

    index_handle: ConnectorIndexHandle
    partition_points: tuple[Any, ...] = attrs.field(converter=_tuple, default=())
    key_range: tuple[Any, Any] | None = None


class ConnectorIndex(abc.ABC):
    """Rows of a table by the values of its index columns, on an executor.

    Created by ``ConnectorIndexProvider.get_index`` in a lookup task; the engine calls :meth:`lookup` with
    that task's keys and closes the page source it returns."""

    @abc.abstractmethod
    def lookup(self, keys: pa.Table) -> ConnectorPageSource:
        """A page source of every live row whose index columns equal one row of ``keys`` (the index columns,
        in order and of their types, distinct, no nulls, sorted by the first), with the output columns asked for.

        Called on the executor once per lookup task (so once per share of the source's keys), never with an
        empty ``keys``. Keys outside the index column's type range are dropped by the engine beforehand."""


class ConnectorIndexProvider(abc.ABC):
    """Must be picklable: the engine ships it to executors.

    Returned by ``Connector.get_index_provider`` on the driver once per MERGE that uses an index."""

    @abc.abstractmethod
    def get_index(
        self,
        *,
        session: ConnectorSession,
        index_handle: ConnectorIndexHandle,
        lookup_columns: Sequence[ColumnHandle],
        output_columns: Sequence[ColumnHandle],
    ) -> ConnectorIndex:
        """Called on an executor, once per task.

        ``index_handle`` is :attr:`ConnectorResolvedIndex.index_handle`; ``lookup_columns`` the index columns
        the keys will hold (today the first index column only); ``output_columns`` the columns each found row
        must have (the target's columns the MERGE reads, with the row id)."""
