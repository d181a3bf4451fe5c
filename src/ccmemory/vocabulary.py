"""The words memories are described with, in one home: sectors, tiers, categories, where a memory came
from, which tools change files and which only look.

Plain constants and no imports: the hooks read them on every tool call, and every layer (capture,
search, SessionStart, the CLI, the viewer, the MCP tools) must agree on them. Migrations keep their
own frozen copies of what they were written against: a schema step must not change when a word is
added here.
"""

#: What kind of memory it is (the schema's CHECK constraint holds these five).
SECTORS = ("episodic", "semantic", "procedural", "emotional", "reflective")
#: How long it is kept: "session" memories are promoted to "project" or fade (the schema checks these two).
TIERS = ("session", "project")
#: What kind of knowledge a memory holds; "general" is the default, and what every captured tool call is.
CATEGORIES = ("architecture", "component", "domain", "pattern", "gotcha", "discovery", "general")
#: Who a memory is for: its own project, or the user in every project (the schema checks these two).
MEMORY_SCOPES = ("project", "user")
#: What a search or list covers: this project with the user-wide memories, the user-wide ones alone, or every project.
SEARCH_SCOPES = ("project", "user", "all")

#: ``source`` of a memory: who wrote it. Added with ``ccmemory add`` (the column's default).
MANUAL_SOURCE = "manual"
#: The observations the capture hook stores, and the session summaries Stop writes.
CAPTURE_SOURCE = "capture"
SUMMARY_SOURCE = "summary"
#: Added by Claude with the ``memory_add`` MCP tool, or by hand in the viewer.
MCP_SOURCE = "mcp"
UI_SOURCE = "ui"
#: Read from an export file without a source of its own.
IMPORT_SOURCE = "import"
#: Who changed a memory file (``memory_file_log.source``): the MCP, UI and import sources above, or the CLI.
CLI_SOURCE = "cli"
#: Entries of the project's ``.claude/knowledge`` index, and what ``ccmemory discover`` found in the code.
KNOWLEDGE_SOURCE = "knowledge"
DISCOVERY_SOURCE = "discovery"
#: Memories that stand alone and that no person wrote as prose: a captured call (code, paths and tool names,
#: embedded with its request), a session summary (embedded whole) and curated knowledge. The others (a
#: conversation's turns, notes) are embedded after the memory before them, get a vector per sentence, and
#: their words match a query's by stem in search's keyword coverage.
SELF_CONTAINED = (CAPTURE_SOURCE, SUMMARY_SOURCE, KNOWLEDGE_SOURCE)

#: Claude Code's tools that change files: their observations name what changed (and echo it back, which
#: capture leaves out).
FILE_CHANGING_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
#: Tools that only look things up: routine, so their observations fade, and no evidence of what a session did.
LOOKUP_TOOLS = ("Read", "Grep", "Glob", "LS")
