"""A generated year of heavy Claude Code use, as sessions for :mod:`transcripts` to write out.

Deterministic for a seed. About ten projects of different sizes and languages (a few get most of
the sessions), sessions spread over working days of the year before ``end``, each of one to five
prompts. The calls follow the mix of a working developer: reads of whole files, shell commands with
their output (tests, git, builds), edits with the file's original text and a structured patch, new
files, searches (file lists and matching lines), globs, to-do lists, a few web fetches and MCP calls
(ccmemory's own among them, which capture skips), and now and then a Task whose subagent makes its
own calls in a transcript of its own. About one call in fifteen fails (a test run exiting 1, an edit
whose old string is not in the file, a file that does not exist), some results are too large for
capture (a long log, a big file), a few hold secrets and ``<private>`` spans that redaction must take
out. Results carry the shapes Claude Code 2.1.330 gives PostToolUse as ``tool_response``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

from transcripts import Call, Session, Turn

LANGUAGES = {
    "python": ("py", "def {name}({args}):", "    return {expr}", "tests/test_{module}.py", "pytest -q {test}"),
    "typescript": ("ts", "export function {name}({args}) {{", "  return {expr};", "src/{module}.test.ts",
                   "npx vitest run {test}"),
    "go": ("go", "func {name}({args}) error {{", "\treturn {expr}", "{module}_test.go", "go test ./... -run {name}"),
    "rust": ("rs", "pub fn {name}({args}) -> Result<()> {{", "    {expr}", "tests/{module}.rs", "cargo test {name}"),
}
PROJECTS = [("billing-api", "python", 30), ("web-dashboard", "typescript", 20), ("ingest-worker", "go", 12),
            ("infra-scripts", "python", 8), ("mobile-sync", "typescript", 8), ("data-pipeline", "python", 7),
            ("cli-tools", "rust", 5), ("docs-site", "typescript", 4), ("auth-service", "go", 4),
            ("ml-experiments", "python", 2)]
WORDS = ("invoice account customer payment retry queue cache token session report export import schema migration "
         "user order refund ledger balance webhook event batch worker config parser render widget chart filter "
         "search index shard backup restore upload download stream buffer timeout limit quota tenant region "
         "metric alert trace span request response handler router client server pool lock").split()
VERBS = "get set load save parse build render check validate compute fetch sync flush merge split apply".split()
TOOLS = [("Read", 27), ("Bash", 26), ("Edit", 18), ("Grep", 9), ("Glob", 4), ("Write", 4), ("TodoWrite", 3),
         ("MultiEdit", 1), ("WebFetch", 1), ("mcp__github__get_issue", 1), ("mcp__plugin_ccmemory_memory__search", 1),
         ("Task", 1)]
PROMPTS = ["Fix the failing test in {test}", "Add {w1} {w2} support to {module}",
           "Why does {func} return the wrong {w1} when the {w2} is empty?", "Refactor {func} so it no longer {verb}s the {w1} twice",
           "The {w1} {w2} job crashes in production with a KeyError, find out why", "Rename {func} and update the callers",
           "Write tests for {func}", "Bump the {w1} dependency and fix what breaks",
           "Make {module} handle a missing {w2} gracefully", "Review the {w1} changes on this branch",
           "Speed up {func}, it is slow on large {w1} lists", "Document how {w1} {w2}s work in the README"]
SECRETS = ["AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2,
           "Authorization: Bearer sk-ant-api03-" + "x9Y8z7W6v5U4" * 4]


@dataclass
class Project:
    path: str
    language: str
    files: dict[str, str]
    functions: list[tuple[str, str]]


@dataclass
class Plan:
    projects: list[Project]
    sessions: list[Session]


def all_calls(plan: Plan) -> Iterator[Call]:
    """Every call of every session, subagents' included."""
    def walk(turns: list[Turn]) -> Iterator[Call]:
        for turn in turns:
            for call in turn.calls:
                yield call
                if call.subagent:
                    yield from walk(call.subagent)
    for session in plan.sessions:
        yield from walk(session.turns)


def _project(rng: random.Random, root: Path, name: str, language: str) -> Project:
    ext, signature, body, test_pattern, _ = LANGUAGES[language]
    files: dict[str, str] = {}
    functions: list[tuple[str, str]] = []
    modules = rng.sample(WORDS, 14)
    for module in modules:
        for kind in ("src", "test"):
            relative = f"src/{name.split('-')[0]}/{module}.{ext}" if kind == "src" else test_pattern.format(module=module)
            lines = [f"// {name}: {module}" if language != "python" else f'"""{name}: the {module} module."""', ""]
            for _ in range(rng.randint(3, 25)):
                verb, noun = rng.choice(VERBS), rng.choice(WORDS)
                func = f"{verb}_{noun}" if language in ("python", "rust") else f"{verb}{noun.title()}"
                if kind == "test":
                    func = f"test_{func}" if language in ("python", "rust") else f"Test{func[0].upper()}{func[1:]}"
                functions.append((relative, func))
                lines.append(signature.format(name=func, args=", ".join(rng.sample(WORDS, rng.randint(0, 3)))))
                for _ in range(rng.randint(2, 9)):
                    a, b = rng.sample(WORDS, 2)
                    lines.append(body.format(expr=f"{a}.{rng.choice(VERBS)}({b}, limit={rng.randint(1, 500)})"))
                if language != "python":
                    lines.append("}")
                lines.append("")
            files[relative] = "\n".join(lines)
    files["README.md"] = f"# {name}\n\n" + "\n".join(f"- {' '.join(rng.sample(WORDS, 8))}" for _ in range(30))
    return Project(str(root / name), language, files, functions)


class _Calls:
    """Makes one session's calls; numbering gives every call a unique id."""

    def __init__(self, rng: random.Random, project: Project, session_id: str) -> None:
        self.rng = rng
        self.project = project
        self.session_id = session_id
        self.number = 0
        self.tools = [name for name, _ in TOOLS]
        self.weights = [weight for _, weight in TOOLS]

    def path(self, relative: str) -> str:
        return f"{self.project.path}/{relative}"

    def make(self, allow_task: bool = True) -> Call:
        rng = self.rng
        tool = rng.choices(self.tools, self.weights)[0]
        while tool == "Task" and not allow_task:
            tool = rng.choices(self.tools, self.weights)[0]
        self.number += 1
        tool_use_id = f"toolu_01{rng.getrandbits(96):024x}"
        relative, func = rng.choice(self.project.functions)
        failing = rng.random() < 0.065
        return getattr(self, f"_{tool.split('__')[0] if tool.startswith('mcp') else tool}")(
            tool_use_id, tool, relative, func, failing)

    def _Read(self, tool_use_id: str, tool: str, relative: str, func: str, failing: bool) -> Call:
        if failing:
            return Call(tool_use_id, tool, {"file_path": self.path(relative.replace(".", "_old."))},
                        error="<tool_use_error>File does not exist.</tool_use_error>")
        content = self.project.files[relative]
        if self.rng.random() < 0.05:
            content = (content + "\n") * self.rng.randint(3, 6)  # a big generated file: over capture's size limit
        lines = content.split("\n")
        return Call(tool_use_id, tool, {"file_path": self.path(relative)}, {"type": "text", "file": {
            "filePath": self.path(relative), "content": content, "numLines": len(lines), "startLine": 1,
            "totalLines": len(lines)}})

    def _Bash(self, tool_use_id: str, tool: str, relative: str, func: str, failing: bool) -> Call:
        rng = self.rng
        test_command = LANGUAGES[self.project.language][4]
        kind = rng.choice(["test", "test", "git", "git", "build", "ls", "log"])
        if kind == "test":
            command = test_command.format(test=relative, name=func)
            description = f"Run the tests for {func}"
            if failing:
                error = (f"Exit code 1\nFAILED {relative}::{func} - AssertionError: expected {rng.randint(1, 99)} "
                         f"{rng.choice(WORDS)}s, got {rng.randint(100, 200)}\n" +
                         "\n".join(f"    {rng.choice(WORDS)}.{rng.choice(VERBS)}() at line {rng.randint(1, 300)}"
                                   for _ in range(rng.randint(3, 30))) + f"\n1 failed, {rng.randint(5, 300)} passed")
                return Call(tool_use_id, tool, {"command": command, "description": description}, error=error)
            stdout = "." * rng.randint(5, 80) + f" [100%]\n{rng.randint(5, 400)} passed in {rng.random() * 9:.2f}s"
        elif kind == "git":
            command = rng.choice(["git status", "git diff --stat", "git log --oneline -10", f"git add {relative}"])
            description = "Inspect the working tree"
            stdout = "\n".join(f"{rng.getrandbits(28):07x} {rng.choice(PROMPTS).format(test=relative, module=relative, func=func, w1=rng.choice(WORDS), w2=rng.choice(WORDS), verb=rng.choice(VERBS))}"  # noqa: E501
                               for _ in range(rng.randint(1, 10)))
            if failing:
                return Call(tool_use_id, tool, {"command": command, "description": description},
                            error="Exit code 128\nfatal: not a git repository (or any of the parent directories): .git")
        elif kind == "build":
            command = rng.choice(["make build", "npm run build", "go build ./...", "cargo build --release"])
            description = "Build the project"
            stdout = "\n".join(f"compiling {rng.choice(WORDS)} v0.{rng.randint(1, 30)}.{rng.randint(0, 9)}"
                               for _ in range(rng.randint(1, 40)))
            if rng.random() < 0.03:
                stdout += "\n" + rng.choice(SECRETS)
            if rng.random() < 0.03:  # a long build log: over capture's size limit
                stdout = (stdout + "\n") * 400
        elif kind == "ls":
            command, description = "ls -la src", "List the sources"
            stdout = "\n".join(f"-rw-r--r-- 1 dev dev {rng.randint(100, 40000):>6} Mar  3 10:{rng.randint(10, 59)} "
                               f"{name.rsplit('/', 1)[-1]}" for name in list(self.project.files)[:rng.randint(3, 28)])
        else:
            command = f"tail -n 50 logs/{rng.choice(WORDS)}.log"
            description = "Read the recent log"
            stdout = "\n".join(f"2025-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} INFO {rng.choice(WORDS)} "
                               f"{rng.choice(VERBS)} {rng.randint(1, 10**6)} ms={rng.randint(1, 900)}"
                               for _ in range(50))
        if failing:
            return Call(tool_use_id, tool, {"command": command, "description": description},
                        error=f"Exit code 2\n{command.split()[0]}: error: {rng.choice(WORDS)} not found")
        return Call(tool_use_id, tool, {"command": command, "description": description},
                    {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False,
                     "noOutputExpected": False})

    def _edit_parts(self, relative: str, func: str) -> tuple[str, str, str]:
        original = self.project.files[relative]
        lines = original.split("\n")
        start = next((n for n, line in enumerate(lines) if func in line), 0)
        old = "\n".join(lines[start:start + self.rng.randint(1, 4)])
        new = old.replace(func, func + "_v2") + f"\n    # {self.rng.choice(WORDS)} {self.rng.choice(VERBS)} fixed"
        return original, old, new

    def _Edit(self, tool_use_id: str, tool: str, relative: str, func: str, failing: bool) -> Call:
        original, old, new = self._edit_parts(relative, func)
        tool_input = {"file_path": self.path(relative), "old_string": old, "new_string": new, "replace_all": False}
        if failing:
            return Call(tool_use_id, tool, dict(tool_input, old_string=old + " "),
                        error=f"<tool_use_error>String to replace not found in file.\nString: {old} </tool_use_error>")
        start = original[:original.find(old)].count("\n") + 1 if old in original else 1
        patch = [{"oldStart": start, "oldLines": old.count("\n") + 1, "newStart": start,
                  "newLines": new.count("\n") + 1,
                  "lines": [f"-{line}" for line in old.split("\n")] + [f"+{line}" for line in new.split("\n")]}]
        return Call(tool_use_id, tool, tool_input, {
            "filePath": self.path(relative), "oldString": old, "newString": new, "originalFile": original,
            "structuredPatch": patch, "userModified": False, "replaceAll": False})

    def _MultiEdit(self, tool_use_id: str, tool: str, relative: str, func: str, failing: bool) -> Call:
        original, old, new = self._edit_parts(relative, func)
        edits = [{"old_string": old, "new_string": new, "replace_all": False}]
        return Call(tool_use_id, tool, {"file_path": self.path(relative), "edits": edits}, {
            "filePath": self.path(relative), "edits": edits, "originalFileContents": original,
            "structuredPatch": [], "userModified": False})

    def _Write(self, tool_use_id: str, tool: str, relative: str, func: str, failing: bool) -> Call:
        rng = self.rng
        new = relative.rsplit("/", 1)[0] + f"/{rng.choice(WORDS)}_{rng.choice(WORDS)}." + relative.rsplit(".", 1)[-1]
        content = "\n".join(f"{rng.choice(VERBS)}_{rng.choice(WORDS)} = {rng.randint(0, 999)}"
                            for _ in range(rng.randint(5, 120)))
        return Call(tool_use_id, tool, {"file_path": self.path(new), "content": content},
                    {"type": "create", "filePath": self.path(new), "content": content, "structuredPatch": [],
                     "originalFile": None})

    def _Grep(self, tool_use_id: str, tool: str, relative: str, func: str, failing: bool) -> Call:
        rng = self.rng
        matching = [self.path(name) for name, text in self.project.files.items() if func in text]
        if rng.random() < 0.5:
            return Call(tool_use_id, tool, {"pattern": func, "output_mode": "files_with_matches"},
                        {"mode": "files_with_matches", "filenames": matching, "numFiles": len(matching)})
        lines = [f"{path}:{rng.randint(1, 200)}:    {func}({rng.choice(WORDS)})" for path in matching]
        return Call(tool_use_id, tool, {"pattern": func, "output_mode": "content", "-n": True},
                    {"mode": "content", "numFiles": 0, "filenames": [], "content": "\n".join(lines),
                     "numLines": len(lines)})

    def _Glob(self, tool_use_id: str, tool: str, relative: str, func: str, failing: bool) -> Call:
        ext = relative.rsplit(".", 1)[-1]
        names = [self.path(name) for name in self.project.files if name.endswith(ext)]
        return Call(tool_use_id, tool, {"pattern": f"**/*.{ext}"},
                    {"filenames": names, "durationMs": self.rng.randint(2, 90), "numFiles": len(names),
                     "truncated": False})

    def _TodoWrite(self, tool_use_id: str, tool: str, relative: str, func: str, failing: bool) -> Call:
        todos = [{"content": f"{self.rng.choice(VERBS).title()} {self.rng.choice(WORDS)} in {relative}",
                  "status": self.rng.choice(["pending", "in_progress", "completed"]),
                  "activeForm": f"Working on {func}"} for _ in range(self.rng.randint(2, 6))]
        return Call(tool_use_id, tool, {"todos": todos}, {"oldTodos": [], "newTodos": todos},
                    text="Todos have been modified successfully. Ensure that you continue to use the todo list.")

    def _WebFetch(self, tool_use_id: str, tool: str, relative: str, func: str, failing: bool) -> Call:
        url = f"https://docs.example.com/{self.rng.choice(WORDS)}/{self.rng.choice(WORDS)}"
        result = " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(40, 300)))
        return Call(tool_use_id, tool, {"url": url, "prompt": f"How does {func} handle retries?"},
                    {"bytes": len(result) * 7, "code": 200, "codeText": "OK", "result": result,
                     "durationMs": self.rng.randint(200, 3000), "url": url})

    def _mcp(self, tool_use_id: str, tool: str, relative: str, func: str, failing: bool) -> Call:
        if "ccmemory" in tool:
            text = f"3 memories for {{\"query\": \"{func}\"}}: edits of {relative} …"
            return Call(tool_use_id, tool, {"query": func}, [{"type": "text", "text": text}])
        text = (f"#{self.rng.randint(10, 999)} {func} fails when the {self.rng.choice(WORDS)} is empty\n"
                + " ".join(self.rng.choice(WORDS) for _ in range(60)))
        return Call(tool_use_id, tool, {"owner": "acme", "repo": "x", "issue_number": self.rng.randint(10, 999)},
                    [{"type": "text", "text": text}])

    def _Task(self, tool_use_id: str, tool: str, relative: str, func: str, failing: bool) -> Call:
        prompt = f"Find every caller of {func} and say which ones pass an empty {self.rng.choice(WORDS)}"
        inner = [self.make(allow_task=False) for _ in range(self.rng.randint(3, 9))]
        answer = f"{func} is called from {len(inner)} places; two pass an empty value."
        agent = f"{self.rng.getrandbits(64):016x}"
        return Call(tool_use_id, tool, {"description": f"Find callers of {func}", "prompt": prompt,
                                        "subagent_type": "Explore"},
                    {"status": "completed", "prompt": prompt, "agentId": agent,
                     "content": [{"type": "text", "text": answer}], "totalDurationMs": self.rng.randint(5000, 90000),
                     "totalTokens": self.rng.randint(3000, 40000), "totalToolUseCount": len(inner)},
                    subagent=[Turn(prompt, inner, answer)], agent_id=agent)


def generate(root: Path, *, sessions: int = 2000, calls: int = 100_000, seed: int = 2025,
             end: datetime | None = None, days: int = 365) -> Plan:
    """Make the projects (folders with a ``.git``, under ``root``) and plan ``sessions`` sessions with about
    ``calls`` tool calls in all, spread over the ``days`` before ``end``."""
    rng = random.Random(seed)
    end = end or datetime(2026, 11, 1, tzinfo=timezone.utc)
    made = [_project(rng, root, name, language) for name, language, _ in PROJECTS]
    for project in made:
        (Path(project.path) / ".git").mkdir(parents=True, exist_ok=True)
    weights = [weight for _, _, weight in PROJECTS]
    mean = calls / sessions
    starts = sorted(end - timedelta(days=days) + timedelta(seconds=rng.uniform(0, days * 86400))
                    for _ in range(sessions))
    planned = []
    for number, start in enumerate(starts):
        project = rng.choices(made, weights)[0]
        session_id = f"{rng.getrandbits(32):08x}-{number:04x}-4{rng.getrandbits(12):03x}-8000-{rng.getrandbits(48):012x}"
        maker = _Calls(rng, project, session_id)
        count = max(1, round(rng.uniform(0.1, 1.9) * mean))
        turns: list[Turn] = []
        prompts = rng.randint(1, 5)
        made_calls = 0
        for turn_number in range(prompts):
            share = count // prompts + (1 if turn_number < count % prompts else 0)
            turn_calls = [maker.make() for _ in range(share)]
            made_calls += share
            relative, func = rng.choice(project.functions)
            prompt = rng.choice(PROMPTS).format(test=relative, module=relative, func=func, w1=rng.choice(WORDS),
                                                w2=rng.choice(WORDS), verb=rng.choice(VERBS))
            if rng.random() < 0.02:
                prompt += f" <private>the staging password is {rng.getrandbits(40):x}</private>"
            notes = {index: f"Let me look at {func} first." for index in range(share) if rng.random() < 0.15}
            turns.append(Turn(prompt, turn_calls, f"Done: {prompt[:80]}. The {func} change is in {relative}.",
                              notes=notes))
        branch = "main" if rng.random() < 0.5 else f"feature/{rng.choice(WORDS)}-{rng.choice(WORDS)}"
        planned.append(Session(session_id, project.path, branch, start, turns,
                               step=timedelta(seconds=rng.randint(2, 40))))
    return Plan(made, planned)
