"""ccmemory: a persistent, searchable memory of each project for Claude Code.

This package is imported by short-lived hook processes, so this module must stay
empty of imports: everything heavy is imported where it is used.
"""

__version__ = "0.1.0"
