"""ccmemory hook. Stop: write or refresh the session's summary.

Runs under any python3 >= 3.9 with no environment: it puts the plugin's src/
directory on sys.path, and always exits 0 (errors go to <data dir>/logs/hooks.log).
"""
import os
import sys

if sys.version_info >= (3, 9):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))
    try:
        from ccmemory.hooks.runner import main
    except BaseException as exc:  # a broken install must not break Claude Code
        sys.stderr.write("ccmemory hook could not start: %s\n" % (exc,))
    else:
        main("stop")
sys.exit(0)
