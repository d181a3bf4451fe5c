"""What the tests share, beside ``tests/`` as pre-commit keeps its ``testing/``: imported by name
(``from testing.hooks import run_hook``), never found through a bare module on ``sys.path``.

- ``repo``: where this checkout's entry points are.
- ``env``: the one environment builder every child process of a test gets (``isolated_env``).
- ``cli``: the ``ccmemory`` command line, in-process (click's runner) or as a real process.
- ``hooks``, ``mcp``, ``ui``: the real hook entry script, MCP server and viewer, run as Claude Code and a user would.
- ``claude_code``, ``fake_anthropic``: the real Claude Code CLI against a loopback fake of the Messages API.
- ``knowledge``, ``hostile``, ``schema``, ``models``, ``runtime``, ``secret_corpus``: fixtures to run them on.
- ``home_guard``: the run's throwaway HOME and the check that the real one was not touched.
"""
