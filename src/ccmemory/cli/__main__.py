"""``python -m ccmemory.cli``: the command line, for a runtime that has no console script on PATH."""

from . import main

main()
