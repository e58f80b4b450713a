"""The figures sections the benchmark commands write into Markdown files (``--write-doc``)."""

from __future__ import annotations


def replace_section(path: str, begin: str, end: str, section: str, *, heading: str | None = None) -> None:
    """Replace the text from the marker ``begin`` through the marker ``end`` in the Markdown file at ``path`` with
    ``section`` (which carries the markers itself). A file without them: with ``heading``, the section is added at
    its end under that heading; without, SystemExit."""
    with open(path) as f:
        text = f.read()
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + section + rest.split(end, 1)[1]
    elif heading is not None:
        text = text.rstrip("\n") + f"\n\n{heading}\n\n" + section + "\n"
    else:
        raise SystemExit(f"{path} has no {begin} ... {end} section to replace")
    with open(path, "w") as f:
        f.write(text)
