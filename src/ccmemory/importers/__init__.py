"""Importers from other memory tools: what each one kept, mapped onto ccmemory's store.

One module per source, each with an ``import_…`` function that reads the source (untrusted:
bounded reads, no link out of the given folder, SQLite opened read-only) and writes through
:class:`.base.Writer`, which redacts every text, skips what an earlier run brought in and counts
everything in a :class:`.base.Report`:

* :mod:`.claude_memory`: Claude Code's auto memory (``MEMORY.md`` and its topic files);
* :mod:`.claude_mem`: a claude-mem database (observations and session summaries);
* :mod:`.basic_memory`: a basic-memory folder of notes (observations, relations);
* :mod:`.memory_tool`: a directory of Anthropic memory-tool files, as memory files.

The command line's door onto them is ``ccmemory import-from`` (:mod:`ccmemory.cli.importer_commands`).
"""
