"""Streaming jobs (seed 001's continuous DML, made exactly once): the statements that define and drive them.

``CREATE STREAMING JOB [IF NOT EXISTS] j [WITH (duplicates = 'error' | 'last', compact_every = n,
max_commits_per_batch = n)] AS MERGE INTO t USING (SELECT
STREAM ...) s ON ... WHEN ...`` or ``... AS INSERT INTO t [(columns)] SELECT STREAM ...``; ``RUN STREAMING JOB
j`` (everything available now, then stop), ``START STREAMING JOB j`` (keep running), ``STOP STREAMING JOB j``,
``DROP STREAMING JOB [IF EXISTS] j``, ``SHOW STREAMING JOBS``.

A job's statement is split, once, into its streaming *source* (the ``SELECT STREAM`` of ``USING (...)`` or of the
INSERT) and its *body*: the same statement with the source replaced by a placeholder relation name, which each
micro-batch binds to the batch's rows. The split works on tokens, so the source keeps its exact text.
"""

from __future__ import annotations

import re

import attrs
from sqlglot.tokens import Tokenizer, TokenType

from mergekit.sql.model import Query, Statement
from mergekit.sql.parse.dialect import DIALECT
from mergekit.sql.parse.parts import syntax_error

__all__ = [
    "JOB_SOURCE",
    "CreateStreamingJob",
    "JobAction",
    "JobText",
    "ShowStreamingJobs",
    "match_create_job",
    "match_job_action",
    "split_job_source",
]

#: The relation name a job's body reads its micro-batch from.
JOB_SOURCE = "mk_job_batch_source"

_CREATE = re.compile(
    r"(?is)^create\s+streaming\s+job\s+(if\s+not\s+exists\s+)?([\w\"]+)\s*(?:with\s*\((.*?)\)\s*)?as\s+(.*)$"
)
_ACTION = re.compile(r"(?is)^(run|start|stop|drop)\s+streaming\s+job\s+(if\s+exists\s+)?([\w\"]+)$")
_SHOW = re.compile(r"(?is)^show\s+streaming\s+jobs$")
_OPTION = re.compile(r"(?is)^\s*(\w+)\s*=\s*(?:'([^']*)'|(\d+))\s*$")
DUPLICATE_POLICIES = ("error", "last")
#: ``compact_every`` when the job does not set it: the target is compacted after every 50th batch
DEFAULT_COMPACT_EVERY = 50


@attrs.frozen(kw_only=True, eq=False)
class JobText:
    """``CREATE STREAMING JOB``'s parts: the job's name, its options and its statement's text."""

    name: str
    if_not_exists: bool
    duplicates: str
    compact_every: int
    max_commits_per_batch: int
    statement: str


@attrs.frozen(kw_only=True, eq=False)
class CreateStreamingJob(JobText, Statement):
    """``CREATE STREAMING JOB``: its text's parts (``statement`` its MERGE or INSERT as written), ``source`` the
    streaming query it reads; ``body`` (``Merge`` or ``Insert``) the statement each micro-batch runs, reading
    :data:`JOB_SOURCE`."""

    kind: str
    source: Query
    body: Statement


@attrs.frozen(kw_only=True)
class JobAction(Statement):
    """``RUN``, ``START``, ``STOP`` or ``DROP STREAMING JOB`` (``action`` lower-case)."""

    action: str
    name: str
    if_exists: bool = False


@attrs.frozen
class ShowStreamingJobs(Statement):
    """``SHOW STREAMING JOBS``."""


def _job_name(text: str) -> str:
    name = text.strip('"').lower()
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        raise syntax_error(f"Invalid streaming job name '{text}': letters, digits and '_' only")
    return name


def match_create_job(text: str) -> JobText | None:
    """``CREATE STREAMING JOB ...``'s parts, or None for another statement. ``SYNTAX_ERROR`` for a bad option."""
    m = _CREATE.match(text.strip())
    if m is None:
        if re.match(r"(?is)^create\s+streaming\s+job\b", text.strip()):
            raise syntax_error("CREATE STREAMING JOB needs: CREATE STREAMING JOB name [WITH (...)] AS MERGE | INSERT")
        return None
    duplicates = "error"
    compact_every = DEFAULT_COMPACT_EVERY
    max_commits = 0
    for option in filter(str.strip, (m.group(3) or "").split(",")):
        o = _OPTION.match(option)
        key = o.group(1).lower() if o is not None else None
        if o is not None and key == "duplicates" and o.group(2) is not None:
            duplicates = o.group(2).lower()
            if duplicates not in DUPLICATE_POLICIES:
                raise syntax_error(f"Streaming job option duplicates must be 'error' or 'last', got '{o.group(2)}'")
        elif o is not None and key == "compact_every" and o.group(3) is not None:
            compact_every = int(o.group(3))
        elif o is not None and key == "max_commits_per_batch" and o.group(3) is not None:
            max_commits = int(o.group(3))
        else:
            raise syntax_error(
                f"Unknown streaming job option: {option.strip()} (the options are duplicates = 'error' | 'last', "
                "compact_every = <batches> (0: never) and max_commits_per_batch = <commits> (0: no limit))"
            )
    return JobText(
        name=_job_name(m.group(2)),
        if_not_exists=bool(m.group(1)),
        duplicates=duplicates,
        compact_every=compact_every,
        max_commits_per_batch=max_commits,
        statement=m.group(4).strip(),
    )


def match_job_action(text: str) -> JobAction | ShowStreamingJobs | None:
    """``RUN|START|STOP|DROP STREAMING JOB j`` or ``SHOW STREAMING JOBS``; None for another statement."""
    stripped = text.strip()
    if _SHOW.match(stripped):
        return ShowStreamingJobs()
    m = _ACTION.match(stripped)
    if m is None:
        return None
    if m.group(2) and m.group(1).lower() != "drop":
        raise syntax_error(f"IF EXISTS is only allowed with DROP STREAMING JOB, not {m.group(1).upper()}")
    return JobAction(action=m.group(1).lower(), name=_job_name(m.group(3)), if_exists=bool(m.group(2)))


def split_job_source(text: str) -> tuple[str, str, str]:
    """A job statement's ``(kind, source, body)``: ``kind`` ``MERGE`` or ``INSERT``; ``source`` the text of its
    streaming query; ``body`` the statement reading :data:`JOB_SOURCE` instead. ``SYNTAX_ERROR`` when the statement
    is neither a MERGE whose USING is a parenthesised query nor an INSERT ... SELECT."""
    tokens = Tokenizer(dialect=DIALECT).tokenize(text)
    if not tokens:
        raise syntax_error("A streaming job needs a MERGE or INSERT statement")
    first = tokens[0].text.upper()
    depth = 0
    if first == "MERGE":
        for i, tok in enumerate(tokens):
            if tok.token_type is TokenType.L_PAREN:
                depth += 1
            elif tok.token_type is TokenType.R_PAREN:
                depth -= 1
            elif depth == 0 and tok.token_type is TokenType.USING:
                if i + 1 >= len(tokens) or tokens[i + 1].token_type is not TokenType.L_PAREN:
                    break
                close = _matching(tokens, i + 1)
                start, end = tokens[i + 1].end + 1, tokens[close].start
                return "MERGE", text[start:end].strip(), text[: tokens[i + 1].start] + JOB_SOURCE + text[end + 1 :]
        raise syntax_error("A streaming MERGE job reads its source from USING (SELECT STREAM ...) alias")
    if first == "INSERT":
        for tok in tokens[1:]:
            if tok.token_type is TokenType.L_PAREN:
                depth += 1
            elif tok.token_type is TokenType.R_PAREN:
                depth -= 1
            elif depth == 0 and tok.token_type in (TokenType.SELECT, TokenType.WITH):
                return "INSERT", text[tok.start :].strip(), text[: tok.start] + f"SELECT * FROM {JOB_SOURCE}"
        raise syntax_error("A streaming INSERT job needs INSERT INTO t SELECT STREAM ...")
    raise syntax_error(f"A streaming job runs MERGE or INSERT, not {first}")


def _matching(tokens: list, open_index: int) -> int:
    depth = 0
    for j in range(open_index, len(tokens)):
        if tokens[j].token_type is TokenType.L_PAREN:
            depth += 1
        elif tokens[j].token_type is TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return j
    raise syntax_error("Unbalanced parentheses in the streaming job's USING clause")
