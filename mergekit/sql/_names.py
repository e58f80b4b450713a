"""Names in statements: a dotted name as written, and a table named with its time-travel clause.

The leaf value classes of the statement model (re-exported by ``_model``, where the rest of the model and its
users find them), in a module of their own so that the renderer (``_render``), which builds them from parsed
trees, does not import the model, which renders its trees through the renderer.
"""

from __future__ import annotations

import attrs

__all__ = ["QualifiedName", "TableRef"]


@attrs.frozen
class QualifiedName:
    """A dotted name as written, parts lower-cased unless quoted: ``lake.default.t`` -> ('lake','default','t')."""

    parts: tuple[str, ...]

    def __str__(self) -> str:
        return ".".join(self.parts)

    @property
    def name(self) -> str:
        return self.parts[-1]


@attrs.frozen(kw_only=True)
class TableRef:
    """A table named in a statement, with its time-travel clause (``FOR VERSION AS OF 3`` -> version=3)."""

    name: QualifiedName
    version: int | None = None
    timestamp: str | None = None
    changes_from: int | None = None  # table_changes('t', from[, to]): the change feed of commits from..to
    changes_to: int | None = None

    @property
    def is_change_feed(self) -> bool:
        return self.changes_from is not None
