"""The words memories are described with, in one home: where a memory came from, which tools only look.

Plain constants and no imports: the hooks read them on every tool call, and every layer (capture,
search, SessionStart, the CLI) must agree on them. Migrations keep their own frozen copies of what
they were written against.
"""

#: ``source`` of the observations the capture hook stores and of the session summaries Stop writes.
CAPTURE_SOURCE = "capture"
SUMMARY_SOURCE = "summary"
#: Claude Code's tools that change files: their observations name what changed (and echo it back, which
#: capture leaves out).
FILE_CHANGING_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
#: Tools that only look things up: routine, so their observations fade, and no evidence of what a session did.
LOOKUP_TOOLS = ("Read", "Grep", "Glob", "LS")
