"""``PropertyMetadata``: how a connector declares the table properties it accepts (Trino's ``PropertyMetadata``).

A connector lists its table properties in :meth:`Connector.get_table_properties`. The engine checks every
``CREATE TABLE ... WITH (name = value, ...)`` and ``CREATE TABLE ... WITH (...) AS SELECT`` against that list
before it calls ``ConnectorMetadata.create_table``: a property the list does not declare, a NULL, or a value
that does not convert to the declared type fails the statement with ``INVALID_TABLE_PROPERTY`` naming the
property, and no table is created. So a connector never sees a property it did not declare, and never needs to
check names or types itself; it keeps only the checks that need the table (a partition column must be one of
its columns), raising ``INVALID_TABLE_PROPERTY`` naming the property.

Example (the memory connector)::

    def get_table_properties(self) -> Sequence[PropertyMetadata]:
        return [
            PropertyMetadata(
                name="partitioned_by",
                description="Columns whose values pick the writer task of a row (the table's insert layout)",
                type="array(varchar)",
                default=[],
            )
        ]

When things happen: a ``PropertyMetadata`` is built when the connector module loads (constructing one checks
the declaration, so a bad declaration fails at import, naming the property); the engine calls
``Connector.get_table_properties`` on the driver once per ``CREATE TABLE`` / ``CREATE TABLE AS`` and
:meth:`PropertyMetadata.decode` once per property the statement sets. ``decode`` is pure and cheap.
Property *values* are typed ``Any`` on purpose: they are the Python values of SQL literals (str, bool, int,
float, list of str), and which one depends on the declared ``type``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import attrs

__all__ = ["PROPERTY_TYPES", "PropertyMetadata"]

#: The SQL types a property may have, and the Python values a literal of each converts from:
#: ``varchar`` a string literal; ``boolean`` TRUE / FALSE; ``integer`` and ``bigint`` an integer literal in
#: range; ``double`` a numeric literal; ``array(varchar)`` ``ARRAY['a', 'b']`` (a list of strings).
PROPERTY_TYPES: tuple[str, ...] = ("varchar", "boolean", "integer", "bigint", "double", "array(varchar)")

# The range a literal must fit for the integer types (Trino's INTEGER and BIGINT).
_RANGES = {"integer": (-(2**31), 2**31 - 1), "bigint": (-(2**63), 2**63 - 1)}


def _literal(value: Any) -> str:
    """A value as SQL text, for messages: ``'x'``, ``42``, ``true``, ``ARRAY['a']``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, list | tuple):
        return "ARRAY[" + ", ".join(_literal(v) for v in value) + "]"
    return str(value)


def _strings(values: Iterable[str]) -> tuple[str, ...]:
    # typed converter (``converter=tuple`` defeats type checkers); a list given by a connector is frozen
    return tuple(values)


# attrs validators: they run when a connector declares a property, so mistakes show at import time.
# (``instance`` and ``attribute`` are attrs' own arguments, unused here.)


def _check_name(instance: Any, attribute: Any, value: str) -> None:
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", value):
        raise ValueError(f"property name must be a lower-case identifier, got {value!r}")


def _check_type(instance: Any, attribute: Any, value: str) -> None:
    if value not in PROPERTY_TYPES:
        raise ValueError(f"property type must be one of {', '.join(PROPERTY_TYPES)}; got {value!r}")


@attrs.frozen(kw_only=True)
class PropertyMetadata:
    """One table property a connector accepts in ``WITH (...)``.

    ``name``: lower-case, as the user writes it (unquoted identifiers arrive lower-cased). ``description``:
    one line for users (documentation, tools that list a catalog's properties). ``type``: one of
    :data:`PROPERTY_TYPES`. ``default``: the value ``create_table`` receives when the statement does not set
    the property (None: the property is then absent from ``ConnectorTableMetadata.properties``).
    ``allowed_values``: for a ``varchar`` property, the only values accepted (compared case-insensitively and
    passed on spelled as declared), like Trino's ``enumProperty``.

    Construction checks the declaration itself (name, type, that ``default`` converts), so a mistake in a
    connector shows when the connector is loaded, not when a user first sets the property.
    """

    name: str = attrs.field(validator=_check_name)
    description: str
    type: str = attrs.field(validator=_check_type)
    default: Any = attrs.field(default=None, hash=False)  # may be a list (array properties)
    allowed_values: tuple[str, ...] = attrs.field(default=(), converter=_strings)

    def __attrs_post_init__(self) -> None:
        # checks across fields: allowed values only make sense for varchar, and the default must decode
        if self.allowed_values and self.type != "varchar":
            raise ValueError(f"property {self.name}: allowed_values needs type varchar, not {self.type}")
        if self.default is not None:
            self.decode(self.default)

    def decode(self, value: Any) -> Any:
        """The value ``create_table`` receives for the SQL value ``value`` (never None: the engine refuses
        NULL first). Raises ``ValueError`` saying why the value does not fit; the engine turns it into
        ``INVALID_TABLE_PROPERTY`` naming the catalog and the property."""
        kind = self.type
        # varchar: any string, or one of allowed_values (case-insensitive), spelled as declared
        if kind == "varchar" and isinstance(value, str):
            if not self.allowed_values:
                return value
            for allowed in self.allowed_values:
                if allowed.lower() == value.lower():
                    return allowed
            raise ValueError(f"Invalid value [{value}]. Valid values: {', '.join(self.allowed_values)}")
        # boolean: TRUE / FALSE only (no 'yes', no 1)
        if kind == "boolean" and isinstance(value, bool):
            return value
        # integer / bigint: an integer literal in range (bool is an int to Python: excluded)
        if kind in _RANGES and isinstance(value, int) and not isinstance(value, bool):
            low, high = _RANGES[kind]
            if not low <= value <= high:
                raise ValueError(f"Value {value} is out of range for {kind}")
            return value
        # double: any numeric literal, as float
        if kind == "double" and isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        # array(varchar): ARRAY['a', 'b'] arrives as a list of str; returned as a new list
        if kind == "array(varchar)" and isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return list(value)
        # anything else: the message the engine shows after "Invalid value for catalog ... property ...: "
        raise ValueError(f"Cannot convert [{_literal(value)}] to {kind}")
