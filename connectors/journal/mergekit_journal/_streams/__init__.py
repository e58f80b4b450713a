"""Streams in the journal (seed 001, Calcite's streaming SQL) and what streaming jobs commit.

``tables`` (append-only stream tables read by commit), ``change_feed`` (a table's change feed read as a stream)
and ``jobs`` (a streaming job's batch id recorded in the commit that writes the batch: exactly once). They build on
the catalog and snapshots of the package above and on ``.._files``; the metadata and DDL there build on them.
"""
