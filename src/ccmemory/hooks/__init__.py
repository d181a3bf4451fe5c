"""Claude Code hook logic: capture, Stop summary, SessionEnd promotion, SessionStart context.

The entry scripts in the plugin's top-level ``hooks/`` directory call
:func:`ccmemory.hooks.runner.main`. Everything on this path is standard library
plus ccmemory's own stdlib-only core; heavy packages are never imported here, nor
``typing``, ``dataclasses``, ``pathlib`` or ``logging`` (they cost every tool call
milliseconds): modules on this path import ``typing`` only under ``TYPE_CHECKING = False``
and keep annotations as strings. ``tests/test_hook_imports.py`` checks it.
"""
