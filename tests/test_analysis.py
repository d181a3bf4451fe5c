"""`ccmemory analyze` on fixture repositories of several languages (seed 001: F5.3, F7.1-F7.4, edge cases)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ccmemory import analysis
from ccmemory.analysis import analyzers, languages
from ccmemory.knowledge import settings as project_settings
from knowledge_helpers import write_files as write


def run(root: Path, deep: bool = False) -> dict:
    return analysis.run(project_settings.load(str(root)), deep=deep)


def cli(home: Path, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CCMEMORY_HOME": str(home)}
    env.pop("CLAUDE_PROJECT_DIR", None)
    return subprocess.run([sys.executable, "-m", "ccmemory", "analyze", "--project", str(root), *args], env=env,
                          capture_output=True, text=True, timeout=120)


TS_APP = {
    "package.json": json.dumps({"name": "shop", "main": "dist/index.js", "bin": {"shop": "src/cli.ts"},
                                "dependencies": {"express": "4", "react": "18"}, "devDependencies": {"jest": "29"}}),
    "tsconfig.json": "{}",
    "src/index.ts": "// entry\nexport function startServer(port: number): Promise<void> { return run(port) }\n"
                    "export interface Order { id: string }\nexport type Money = number\nexport const VERSION = '1'\n"
                    "export default class Shop {}\nexport { helper as assist } from './util'\n",
    "src/cli.ts": "#!/usr/bin/env node\n// cli\nconst parseArgs = (argv: string[]) => argv\nexport async function main(argv: string[]): Promise<number> { return 0 }\n",
    "src/util.js": "function helper() {}\nmodule.exports = { helper, other: 1 }\nexports.extra = 2\n",
    "src/styles/site.css": "body { margin: 0 }\n",
    "tests/shop.test.ts": "import { startServer } from '../src'\n",
    "docs/guide.md": "# Guide\n",
    "node_modules/react/index.js": "module.exports = {}\n",
    "vendor/lib.js": "var x = 1\n",
    "assets/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00",
}


def test_quick_analysis_of_a_typescript_project(tmp_path):
    root = write(tmp_path / "shop", TS_APP)
    result = run(root)
    assert result["project"] == "shop"
    names = {item["language"]: item for item in result["languages"]}
    assert names["TypeScript"]["files"] == 3 and names["JavaScript"]["files"] == 1
    assert sum(item["percent"] for item in result["languages"]) in range(98, 103)
    assert "src/cli.ts" in result["entry_points"] and "src/index.ts" in result["entry_points"]
    assert result["source_dirs"] == ["src"] and result["test_dirs"] == ["tests"] and result["doc_dirs"] == ["docs"]
    assert {"package.json", "tsconfig.json"} <= set(result["config_files"])
    # vendored folders are left out; the binary file is not a language
    assert not any(path.startswith(("node_modules", "vendor")) for path in json.dumps(result).split('"'))
    assert result["binary_files"] == 1 and result["files"] == 8
    assert "deep" not in result


def test_deep_analysis_exports_types_signatures_conventions(tmp_path):
    root = write(tmp_path / "shop", TS_APP)
    deep = run(root, deep=True)["deep"]
    index = {item["name"]: item for item in deep["exports"]["src/index.ts"]}
    assert index["startServer"]["kind"] == "function"
    assert index["startServer"]["signature"] == "function startServer(port: number): Promise<void>"
    assert index["Order"]["kind"] == "interface" and index["Money"]["kind"] == "type"
    assert index["Shop"]["kind"] == "default class" and index["assist"]["kind"] == "re-export"
    assert {item["name"] for item in deep["exports"]["src/util.js"]} == {"helper", "other", "extra"}
    assert deep["analyzers"]["TypeScript"] == "typescript"
    assert {"express", "react", "jest"} <= set(deep["frameworks"])
    assert deep["comment_style"].get("//", 0) >= 2 and "#" not in deep["comment_style"]
    assert deep["naming"]["style"] == "camelCase"


def test_any_language_is_analysed_with_heuristics(tmp_path):
    root = write(tmp_path / "mixed", {
        "pyproject.toml": '[project]\nname = "tool"\n[project.scripts]\ntool = "tool.cli:main"\n',
        "tool/__init__.py": "", "tool/cli.py": "# the CLI\ndef main_entry(arg_value):\n    return arg_value\n\nclass Runner:\n    pass\n",
        "service/main.go": "// Package main\npackage main\n\nfunc HandleRequest(w http.ResponseWriter) {}\n",
        "engine/src/lib.rs": "// engine\npub fn compute_total(items: &[u32]) -> u32 { 0 }\npub struct Ledger;\n",
        "scripts/deploy": "#!/usr/bin/env bash\necho deploy\n",
        "NOTES": "plain text without an extension\n",
        "data.xyz": "unknown extension\n",
    })
    result = run(root, deep=True)
    names = {item["language"] for item in result["languages"]}
    assert {"Python", "Go", "Rust", "Shell", "Text", "Other"} <= names  # shebang: Shell; no shebang: Text
    assert "tool/cli.py" in result["entry_points"] and "service/main.go" in result["entry_points"]
    exports = result["deep"]["exports"]
    assert {item["name"] for item in exports["tool/cli.py"]} == {"main_entry", "Runner"}
    assert {item["name"] for item in exports["service/main.go"]} == {"HandleRequest"}
    assert {item["name"] for item in exports["engine/src/lib.rs"]} == {"compute_total", "Ledger"}
    assert result["deep"]["analyzers"]["Python"] == "heuristic"
    assert result["deep"]["naming"]["style"] == "snake_case"
    assert result["by_directory"]["service"] == "Go" and result["by_directory"]["engine"] == "Rust"


def test_language_detection_table():
    assert languages.language_of("a.tsx") == "TypeScript" and languages.language_of("b.exs") == "Elixir"
    for extension in (".ts", ".tsx", ".js", ".jsx", ".py", ".go", ".rs", ".java", ".kt", ".swift", ".c", ".cpp", ".h",
                      ".rb", ".php", ".cs", ".fs", ".scala", ".clj", ".ex", ".exs", ".hs", ".ml", ".lua", ".sh",
                      ".bash", ".zsh", ".ps1", ".r", ".jl"):
        assert languages.language_of("x" + extension) in languages.SOURCE_LANGUAGES, extension
    assert languages.language_of("x.weird") == "Other"
    assert languages.language_of("run", b"#!/usr/bin/env python3\n") == "Python"
    assert languages.language_of("run", b"#!/bin/sh\n") == "Shell"
    assert languages.language_of("README", b"hello") == "Text"


def test_custom_analyzer_is_loaded_and_a_broken_one_falls_back(tmp_path):
    root = write(tmp_path / "custom", {
        "src/app.py": "def visible():\n    pass\n",
        ".claude/analyzers/python.py": "def analyze(path, text):\n    return {'exports': ['from-custom:' + path]}\n",
        ".claude/analyzers/go.py": "this is not python(\n",
        "cmd/main.go": "package main\nfunc Run() {}\n",
    })
    result = run(root, deep=True)
    assert result["deep"]["exports"]["src/app.py"][0]["name"] == "from-custom:src/app.py"
    assert result["deep"]["analyzers"]["Python"] == "custom:python.py"
    assert result["deep"]["analyzers"]["Go"] == "heuristic"
    assert any("go.py could not be loaded" in problem for problem in result["problems"])
    assert analyzers.custom_file_name("C#") == "csharp.py" and analyzers.custom_file_name("C++") == "cpp.py"


def test_empty_and_binary_only_repositories(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(empty)["notes"] == ["No source files found"]
    binary = write(tmp_path / "binary", {"a.png": b"\x89PNG\x00", "b.bin": b"\x00\x01", "blob": b"\x00\x00\x00"})
    result = run(binary)
    assert result["notes"] == ["No analyzable files"] and result["files"] == 0 and result["binary_files"] == 3


def test_large_trees_are_sampled(tmp_path):
    files = {f"src/module_{n:04d}.py": f"def function_{n}():\n    return {n}\n" for n in range(1200)}
    root = write(tmp_path / "big", files)
    result = run(root, deep=True)
    deep = result["deep"]
    assert result["files"] == 1200 and deep["source_files"] == 1200
    assert deep["sampled"] == 400 and "Sampled 400 of 1200 source files" in result["notes"]
    sampled = sorted(deep["exports"])
    assert sampled[0] == "src/module_0000.py" and sampled[-1] >= "src/module_1190.py"  # spread over the tree


def test_cli_formats_text_and_json(home, tmp_path):
    root = write(tmp_path / "shop", TS_APP)
    text = cli(home, root)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == "Project: shop"
    assert lines[1].startswith("Languages: TypeScript (") and "JavaScript (" in lines[1]
    assert lines[2].startswith("Entry points: ") and "src/cli.ts" in lines[2]
    assert lines[3].startswith("Directories: ") and "| Files: 8 | Lines: " in lines[3]
    deep = cli(home, root, "--deep")
    assert "Exports:" in deep.stdout and "startServer" in deep.stdout and "Frameworks:" in deep.stdout
    as_json = json.loads(cli(home, root, "--json").stdout)
    assert as_json["mode"] == "quick" and as_json["project"] == "shop"
    assert json.loads(cli(home, root, "--deep", "--json").stdout)["mode"] == "deep"


def test_project_config_ignored_dirs_apply(tmp_path):
    root = write(tmp_path / "cfg", {"src/a.py": "x = 1\n", "generated/b.py": "y = 2\n",
                                     ".claude/memory.config.json": json.dumps({"ignored_dirs": ["generated"]})})
    assert run(root)["files"] == 1
