"""The conformance kit's summary (a pytest plugin, loaded through the ``pytest11`` entry point ``mergekit-kit``).

A kit test that passed either exercised the behaviour, checked the exact refusal of an opted-out behaviour
(``refused``), or found nothing to test for this connector (``not applicable``: a behaviour the test needs is opted
out, or the connector takes another path). The kit's tests say which (:func:`record`); at the end of the run the
terminal summary counts them apart per test class, as Trino's ``TestingConnectorBehavior`` report does::

    mergekit conformance kit
      TestMyConnector: 61 exercised, 9 refused (opted out: the exact NOT_SUPPORTED checked), 4 not applicable, 0 failed
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

__all__ = ["record"]

KEY = "mergekit-kit"
EXERCISED, REFUSED, NOT_APPLICABLE = "exercised", "refused", "not applicable"

_current: list[Any] = []  # the item whose test is running
_TALLY = pytest.StashKey[dict[str, Counter[str]]]()


def record(kind: str, why: str = "") -> None:
    """Say what the running kit test did (``refused`` or ``not applicable``; the default is ``exercised``)."""
    if _current:
        _current[-1].user_properties.append((KEY, (kind, why)))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    _current.append(item)
    try:
        return (yield)
    finally:
        _current.pop()


def _kit_class(item: pytest.Item) -> str | None:
    """The name of the item's test class when the item is one of the kit's tests (``BaseConnectorTest``'s)."""
    cls = getattr(item, "cls", None)
    base = next((c for c in getattr(cls, "__mro__", ()) if c.__qualname__ == "BaseConnectorTest"), None)
    if cls is None or base is None or base.__module__ != "mergekit.testing":
        return None
    name = getattr(item, "originalname", item.name)
    return str(cls.__name__) if hasattr(base, name) else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    cls = _kit_class(item) if call.when == "call" else None
    if cls is None:
        return report
    kinds = [value[0] for key, value in item.user_properties if key == KEY]
    kind = "failed" if call.excinfo is not None else (kinds[-1] if kinds else EXERCISED)
    item.config.stash.setdefault(_TALLY, {}).setdefault(cls, Counter())[kind] += 1
    advice = _opt_out_advice(item, call)
    if advice:
        report.sections.append(("mergekit conformance kit: what to opt out of", advice))
    return report


# The behaviour each kit test needs beyond CREATE TABLE and INSERT (a scenario says its own: "requires").
_TEST_BEHAVIORS = {
    "test_check_constraint": ("CHECK_CONSTRAINT",),
    "test_column_default": ("COLUMN_DEFAULT",),
    "test_add_column": ("ADD_COLUMN",),
    "test_create_and_drop_table": ("CREATE_TABLE", "DROP_TABLE"),
    "test_types_round_trip": ("TYPE_DECIMAL", "TYPE_DATE", "TYPE_TIMESTAMP", "TYPE_VARBINARY", "UPDATE", "MERGE"),
    "test_predicates_on_every_type": ("TYPE_DECIMAL", "TYPE_DATE", "TYPE_TIMESTAMP", "TYPE_VARBINARY"),
    "test_failed_statements_leave_nothing_behind": ("MERGE",),
    "test_failed_row_level_statements_leave_nothing_behind": ("DELETE", "UPDATE"),
}


def _opt_out_advice(item: pytest.Item, call: pytest.CallInfo[None]) -> str:
    """For a kit test that failed because the connector refused something (NOT_SUPPORTED) it was not opted out of:
    which behaviour to opt out of, and how."""
    from mergekit.errors import ErrorCode, MergekitError

    from ._behavior import DEFAULT_MESSAGES, Behavior

    error = call.excinfo.value if call.excinfo is not None else None
    if not isinstance(error, MergekitError) or error.code is not ErrorCode.NOT_SUPPORTED:
        return ""
    by_message = {message: behavior for behavior, message in DEFAULT_MESSAGES.items()}
    if error.message in by_message:
        names = [by_message[error.message].name]
    elif getattr(item, "originalname", "") == "test_scenario":
        names = [Behavior(b).name for b in item.callspec.params["scenario"].get("requires", [])]  # type: ignore[attr-defined]
    else:
        names = list(_TEST_BEHAVIORS.get(getattr(item, "originalname", item.name), ()))
    listed = ", ".join(f"Behavior.{n}" for n in names) or "the behaviour this test needs"
    return (
        f"The connector refused what {item.name} needs ({error}).\n"
        f"If it does not support it, opt out in your BaseConnectorTest subclass: unsupported = {{{listed}}} "
        "(only those it refuses); the kit then checks the exact refusal. A message other than the SPI's default "
        "goes in not_supported_messages = {Behavior.X: '...'}. docs/develop/testing-your-connector.md lists every "
        "kit test and the behaviours it needs."
    )


def pytest_terminal_summary(terminalreporter: Any) -> None:
    tally = terminalreporter.config.stash.get(_TALLY, {})
    if not tally:
        return
    terminalreporter.section("mergekit conformance kit")
    for cls, counts in sorted(tally.items()):
        terminalreporter.write_line(
            f"  {cls}: {counts[EXERCISED]} exercised, {counts[REFUSED]} refused (opted out: the exact NOT_SUPPORTED "
            f"checked), {counts[NOT_APPLICABLE]} not applicable, {counts['failed']} failed"
        )
