"""``python -m mergekit.cli``: the same program as the ``mergekit`` script."""

from mergekit.cli import main

if __name__ == "__main__":
    main()
