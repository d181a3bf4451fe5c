"""``python -m ccmemory``: the command line."""

from .cli import main

main()
