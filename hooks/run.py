"""ccmemory's hook entry point: ``python3 -I -S hooks/run.py <event>``.

``-I`` keeps every ``PYTHON*`` variable out: a relative ``PYTHONPATH`` entry would make
Python import the project's files (even while it starts, before this script runs).

``<event>`` is post_tool_use (PostToolUse and PostToolUseFailure), stop,
session_end or session_start. Runs under any python3 >= 3.9 with no
environment: it puts the plugin's src/ directory on sys.path and always exits 0
(errors go to <data dir>/logs/hooks.log), so a broken install never breaks
Claude Code.
"""
import os
import sys

# Cache compiled bytecode even where PYTHONDONTWRITEBYTECODE is set: recompiling
# ccmemory's modules would cost every tool call more than the rest of the hook.
sys.dont_write_bytecode = False
if sys.version_info >= (3, 9):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))
    try:
        from ccmemory.hooks.runner import main
    except BaseException as exc:
        sys.stderr.write("ccmemory hook could not start: %s\n" % (exc,))
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "")
sys.exit(0)
