"""Names in statements: a dotted name as written, and a table named with its time-travel clause.

The leaf value classes of the statement model (re-exported by ``_model``, where the rest of the model and its
users find them), in a module of their own so that the renderer (``_render``), which builds them from parsed
trees, does not import the model, which renders its trees through the renderer.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

__all__ = ["QualifiedName", "TableRef"]


@attrs.frozen
class QualifiedName:
    """A dotted name: ``parts`` lower-cased, quoted or not (Trino folds identifiers): ``lake.default.T`` ->
    ('lake', 'default', 't').

    ``quoted`` keeps, part by part, the exact spelling of a part the statement quoted (None for an unquoted
    part); None when no part was quoted. ``pg.public."MixedCase"`` has parts ('pg', 'public', 'mixedcase') and
    quoted (None, None, 'MixedCase'). It reaches connectors (``SchemaTableName.quoted_table``) so that one over a
    case-sensitive store can find a table whose name is not lower case; it is part of equality, so ``"Foo"`` and
    ``foo`` are two table references (a database may have both)."""

    parts: tuple[str, ...]
    quoted: tuple[str | None, ...] | None = attrs.field(default=None, repr=False, kw_only=True)

    def __str__(self) -> str:
        return ".".join(self.parts)

    @property
    def name(self) -> str:
        return self.parts[-1]

    @property
    def written(self) -> str:
        """The name as the statement wrote it (quoted parts in their spelling), for messages."""
        if self.quoted is None:
            return str(self)
        return ".".join(q if q is not None else p for p, q in zip(self.parts, self.quoted, strict=True))

    def quoted_part(self, index: int) -> str | None:
        """The quoted spelling of part ``index`` (negative counts from the end), or None."""
        return self.quoted[index] if self.quoted is not None else None

    @classmethod
    def of(cls, parts: Iterable[tuple[str, bool]]) -> QualifiedName:
        """A name from its parts as written: (text, quoted) pairs. Unquoted parts are folded to lower case."""
        pairs = list(parts)
        folded = tuple(text.lower() for text, _ in pairs)
        if not any(q for _, q in pairs):
            return cls(folded)
        return cls(folded, quoted=tuple(text if q else None for text, q in pairs))

    @classmethod
    def parse(cls, text: str) -> QualifiedName:
        """A dotted name given as text (``Engine.table("pg.public.\"MixedCase\"")``): a part in double quotes
        keeps its spelling (``""`` is a quote inside it)."""
        pairs = []
        for part in text.split("."):
            part = part.strip()
            if len(part) >= 2 and part.startswith('"') and part.endswith('"'):
                pairs.append((part[1:-1].replace('""', '"'), True))
            else:
                pairs.append((part, False))
        return cls.of(pairs)


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
