"""The stdio MCP server and the tools it exposes (imported only by the server process)."""
