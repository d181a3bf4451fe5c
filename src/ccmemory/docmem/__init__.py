"""docmem: hierarchical memory trees, their token-budgeted rendering and the CLAUDE.md view.

A docmem is a tree of short text nodes kept in the project's SQLite database
(:mod:`.nodes`). Captured memory is reachable through the same operations as
read-only virtual trees built on the fly from the memory store
(:mod:`.virtual`): a session with its observations, a document with its
sections and chunks. :mod:`.ordering` keeps siblings in order without
reindexing, :mod:`.expand` renders a subtree within a token budget,
:mod:`.query` answers read-only SQL over a project's nodes, and :mod:`.view`
writes active views into CLAUDE.md. The ``docmem_*`` MCP tools over all this
are in :mod:`ccmemory.mcp.docmem_tools`.
"""
