"""The same behaviours on a PostgreSQL catalog: a throwaway PostgreSQL server started for this module.

The tests below are imported from the SQLite modules; ``make_harness`` is overridden here so that every
one of them runs against ``catalog_uri=postgresql://...`` (a fresh database per test).
"""

from __future__ import annotations

import os
import uuid
from typing import Any

import pytest

from tests.journal.journal_harness import JournalHarness
from tests.journal.test_history import (  # noqa: F401 - collected here against PostgreSQL
    t,
    test_change_feed,
    test_compaction_keeps_reads_and_archives_history,
    test_concurrent_inserts_of_the_same_new_key_conflict,
    test_time_travel_by_version_and_timestamp,
    test_two_writers_on_the_same_key_second_commit_conflicts,
    test_writers_on_disjoint_keys_both_commit,
)
from tests.journal.test_schema_evolution import (  # noqa: F401 - the catalog's spec history on PostgreSQL
    test_schema_changes_through_the_spi_keep_each_versions_columns,
)
from tests.journal.test_seed_examples import test_seed_examples_on_hr_depts  # noqa: F401
from tests.journal.test_streams import (  # noqa: F401 - the stream check under PostgreSQL's row lock
    orders,
    test_commit_is_checked_against_commits_made_after_its_statement_began,
    test_commits_list_versions_counts_and_low_high,
    test_concurrent_inserters_never_commit_out_of_order,
    test_out_of_order_insert_is_refused_and_commits_nothing,
)
from tests.journal.test_writes import (  # noqa: F401
    items,
    test_composite_key,
    test_insert_of_live_key_violates_primary_key_and_writes_nothing,
    test_key_move_onto_live_key_is_rejected_but_swap_is_allowed,
    test_table_without_key_gets_hidden_row_ids,
)


@pytest.fixture
def make_harness(tmp_path, pg_server):
    import psycopg

    db = f"mk_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(f"{pg_server}/postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {db}")
    made: list[JournalHarness] = []

    def make(**options: Any) -> JournalHarness:
        h = JournalHarness(str(tmp_path / "warehouse"), catalog_uri=f"{pg_server}/{db}", **options)
        made.append(h)
        return h

    yield make
    for h in made:
        h.connector.shutdown()


def test_catalog_tables_live_in_postgres(make_harness, pg_server):
    import pyarrow as pa

    lake = make_harness()
    lake.create("t", [("id", pa.int64())], key=["id"])
    lake.insert("t", {"id": 1})
    import psycopg

    uri = lake.connector.config.catalog_uri
    assert uri.startswith("postgresql://")
    with psycopg.connect(uri) as conn:
        assert conn.execute("SELECT table_name, current_seq FROM mk_tables").fetchall() == [("t", 1)]
    assert not os.path.exists(os.path.join(lake.warehouse, "_catalog.sqlite"))
