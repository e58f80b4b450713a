"""The SPI is mostly documentation, as Trino's is (47-70% of the lines of its SPI files; STYLE.md).

For every module of ``mergekit/spi`` the share of non-blank lines that are documentation (docstring lines of the
module, its classes and functions, and attribute docstrings: string statements, plus comment lines) must be at
least :data:`MINIMUM`. Blank lines count as neither and are left out of the denominator.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

MINIMUM = 0.40
SPI = Path(__file__).resolve().parents[2] / "mergekit" / "spi"


def documentation_lines(source: str) -> tuple[int, int]:
    """(documentation lines, non-blank lines) of one module's source."""
    lines = source.splitlines()
    non_blank = {n for n, text in enumerate(lines, start=1) if text.strip()}
    documented: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        # docstrings of modules, classes and functions, and attribute docstrings (a bare string statement)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            end = node.end_lineno or node.lineno
            documented.update(range(node.lineno, end + 1))
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            documented.add(token.start[0])
    return len(documented & non_blank), len(non_blank)


def documentation_shares() -> dict[str, float]:
    out = {}
    for path in sorted(SPI.glob("*.py")):
        doc, total = documentation_lines(path.read_text())
        out[path.name] = doc / total if total else 1.0
    return out


def test_every_spi_module_is_mostly_documentation() -> None:
    shares = documentation_shares()
    assert shares, f"no modules found under {SPI}"
    report = "\n".join(f"  {name:20} {share:6.1%}" for name, share in shares.items())
    low = [name for name, share in shares.items() if share < MINIMUM]
    assert not low, f"SPI modules below {MINIMUM:.0%} documentation: {', '.join(low)}\n{report}"


def test_the_measure_counts_docstrings_and_comments_but_not_blank_lines() -> None:
    source = '"""Module\ndocstring."""\n\nx = 1  # a comment\n\n\ndef f() -> None:\n    """Doc."""\n    return None\n'
    # documentation: the 2 docstring lines, the commented line, the function's docstring; 6 non-blank lines
    assert documentation_lines(source) == (4, 6)


if __name__ == "__main__":  # python tests/structure/test_spi_docs.py: the measured shares
    for name, share in documentation_shares().items():
        print(f"{name:20} {share:6.1%}")
