"""The ``mergekit`` command line (DESIGN.md §4, docs/cli.md): :func:`main`, the click group with its commands.

``mergekit.cli.group`` defines the group, ``mergekit.cli.commands`` the commands, added here; no module of the
package imports one that imports it back. The command line reaches Spark only through ``mergekit.execution``.

To add a command: define it with ``@click.command()`` in :mod:`mergekit.cli.commands` (or a module of its own)
and list it in :func:`mergekit.cli.commands.register`.
"""

from __future__ import annotations

from mergekit.cli.commands import register
from mergekit.cli.group import main

__all__ = ["main"]

register(main)
