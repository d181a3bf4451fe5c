"""The hook path's import budget, checked: each hook runs without loading a costly module.

Every tool call starts ``python3 -I -S hooks/run.py <event>`` (hooks.json), so whatever the hook
imports is paid on each call: ``typing``, ``dataclasses``, ``pathlib`` or ``logging`` cost
milliseconds, and the runtime's packages (click, mcp, numpy, apsw, onnxruntime …) are not even
installed for the system ``python3``. Each event here runs end to end in that very process, on a
real payload against a throwaway data dir, and records ``sys.modules`` as the process ends, so
imports made lazily inside the handler (and in the detached capture child) count too.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from ccmemory.hooks.runner import HANDLERS
from testing.env import isolated_env
from testing.hooks import (
    bash_call, common, HOOK_PYTHON, tool_call, wait_for_background_captures, write_config, write_transcript,
)
from testing.repo import HOOKS

FORBIDDEN = ("typing", "dataclasses", "pathlib", "logging", "asyncio", "click", "mcp", "numpy", "orjson",
             "apsw", "onnxruntime", "fastembed", "tokenizers", "sqlite_vec", "starlette", "uvicorn",
             "markdown_it")

#: Runs hooks/run.py as ``__main__`` in this process; each process (the hook and its detached capture
#: child alike) writes its ``sys.modules`` to ``<out>/modules.<pid>`` just before ``os._exit`` ends it (whole: written
#: under another name, then renamed).
WRAPPER = """
import os, sys
script, event, out = sys.argv[1:4]
real_exit = os._exit
def _exit(code):
    part = os.path.join(out, "part.%d" % os.getpid())
    with open(part, "w") as f:  # renamed when whole: the test reads a dump as soon as it appears
        f.write("\\n".join(sorted(sys.modules)))
    os.rename(part, os.path.join(out, "modules.%d" % os.getpid()))
    real_exit(code)
os._exit = _exit
sys.argv = [script, event]
with open(script) as f:
    code = compile(f.read(), script, "exec")
exec(code, {"__name__": "__main__", "__file__": script})
"""


def loaded_modules(event: str, payload: dict, home: Path, out: Path) -> set[str]:
    """Run the hook ``event`` on ``payload`` like hooks.json does; the modules its processes had loaded."""
    out.mkdir()
    result = subprocess.run(
        [HOOK_PYTHON, "-I", "-S", "-c", WRAPPER, str(HOOKS / "run.py"), event, str(out)],
        input=json.dumps(payload).encode(), capture_output=True, env=isolated_env(home), timeout=60,
    )
    wait_for_background_captures(home)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr == b"", result.stderr.decode()
    # PostToolUse stores its observation in a forked child, which writes its list just after its marker goes.
    processes = 2 if event == "post_tool_use" else 1
    deadline = time.monotonic() + 30
    while len(list(out.glob("modules.*"))) < processes and time.monotonic() < deadline:
        time.sleep(0.01)
    dumps = sorted(out.glob("modules.*"))
    assert len(dumps) == processes, f"{len(dumps)} of the hook's {processes} process(es) reached os._exit"
    return {name for dump in dumps for name in dump.read_text().split()}


def forbidden_in(modules: set[str]) -> list[str]:
    return sorted(name for name in modules if name.split(".")[0] in FORBIDDEN)


def session_payloads(project: Path) -> list[tuple[str, dict]]:
    """A short session as Claude Code reports it: two tool calls (one failing), a turn's end, its end, a restart."""
    session = "budget-session"
    return [
        ("post_tool_use", bash_call(session, project, "pytest -q", "1 passed", "toolu_1")),
        ("post_tool_use", tool_call(session, project, "Edit",
                                    {"file_path": str(project / "app.py"), "old_string": "a = 1",
                                     "new_string": "a = 2"}, {"filePath": str(project / "app.py")}, "toolu_2")),
        ("post_tool_use", tool_call(session, project, "Bash", {"command": "make"}, "make: *** Error 2", "toolu_3",
                                    event="PostToolUseFailure", error="Exit code 2")),
        ("stop", common(session, project, "Stop", stop_hook_active=False, last_assistant_message="Done: we chose X.")),
        ("session_end", common(session, project, "SessionEnd", reason="other")),
        ("session_start", common("budget-next", project, "SessionStart", source="startup")),
    ]


@pytest.mark.parametrize("summary_mode", ["extractive", "claude"])
def test_no_hook_event_loads_a_forbidden_module(home: Path, project_dir: Path, tmp_path: Path,
                                                summary_mode: str) -> None:
    write_config(home, {"summary": {"mode": summary_mode, "claude_command": "/bin/false"}})
    (project_dir / "app.py").write_text("a = 2\n")
    write_transcript(project_dir / "budget-session.jsonl", ["Fix the build", "Now run the tests"])
    seen = {}
    for step, (event, payload) in enumerate(session_payloads(project_dir)):
        modules = loaded_modules(event, payload, home, tmp_path / f"step{step}")
        assert f"ccmemory.hooks.{HANDLERS[event].partition(':')[0]}" in modules, f"{event} never ran its handler"
        seen[f"{step}:{event}"] = forbidden_in(modules)
    assert seen == {key: [] for key in seen}
    log = home / "logs" / "hooks.log"
    # The detached model-summary worker (a process of its own, outside the hook) may log that /bin/false failed.
    errors = [line for line in (log.read_text().splitlines() if log.exists() else []) if "model summary" not in line]
    assert errors == []
