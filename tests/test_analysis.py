"""`ccmemory analyze` on fixture repositories of several languages (seed 001: F5.3, F7.1-F7.4, edge cases)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from ccmemory import analysis
from ccmemory.analysis import analyzers, languages, structure, trust
from ccmemory.knowledge import settings as project_settings
from testing.cli import invoke, on_terminal
from testing.knowledge import write_files as write


def run(root: Path, deep: bool = False) -> dict:
    return analysis.run(project_settings.load(str(root)), deep=deep)


def cli(home: Path, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return invoke(home, None, "analyze", "--project", str(root), *args)


TS_APP = {
    "package.json": json.dumps({"name": "shop", "main": "dist/index.js", "bin": {"shop": "src/cli.ts"},
                                "dependencies": {"express": "4", "react": "18"}, "devDependencies": {"jest": "29"}}),
    "tsconfig.json": "{}",
    "src/index.ts": "// entry\nexport function startServer(port: number): Promise<void> { return run(port) }\n"
                    "export interface Order { id: string }\nexport type Money = number\nexport const VERSION = '1'\n"
                    "export default class Shop {}\nexport { helper as assist } from './util'\n",
    "src/cli.ts": "#!/usr/bin/env node\n// cli\nconst parseArgs = (argv: string[]) => argv\n"
                  "export async function main(argv: string[]): Promise<number> { return 0 }\n",
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
        "tool/__init__.py": "",
        "tool/cli.py": "# the CLI\ndef main_entry(arg_value):\n    return arg_value\n\nclass Runner:\n    pass\n",
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


def test_custom_analyzer_is_loaded_and_a_broken_one_falls_back(home, tmp_path):
    root = write(tmp_path / "custom", {
        "src/app.py": "def visible():\n    pass\n",
        ".claude/analyzers/python.py": "def analyze(path, text):\n    return {'exports': ['from-custom:' + path]}\n",
        ".claude/analyzers/go.py": "this is not python(\n",
        "cmd/main.go": "package main\nfunc Run() {}\n",
    })
    skipped = run(root, deep=True)  # the repository's code runs only once the user allowed it
    assert skipped["deep"]["analyzers"]["Python"] == "heuristic"
    assert skipped["deep"]["skipped_analyzers"] == ["go.py", "python.py"]
    trust.allow(str(root), trust.read(str(root)))
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
    prose = write(tmp_path / "prose", {"README.md": "# Notes\n", "notes.txt": "todo\n", "data.csv": "a,b\n"})
    result = run(prose, deep=True)
    assert "No source files found" in result["notes"] and result["deep"]["sampled"] == 0


def test_large_trees_are_sampled(tmp_path):
    files = {f"src/module_{n:04d}.py": f"def function_{n}():\n    return {n}\n" for n in range(1200)}
    root = write(tmp_path / "big", files)
    result = run(root, deep=True)
    deep = result["deep"]
    assert result["files"] == 1200 and deep["source_files"] == 1200
    assert deep["sampled"] == 400 and "Sampled 400 of 1200 source files" in result["notes"]
    sampled = sorted(deep["exports"])
    assert sampled[0] == "src/module_0000.py" and sampled[-1] >= "src/module_1190.py"  # spread over the tree
    assert len(result["tree"]) == structure.TREE_ENTRIES and result["tree_omitted"] == 1201 - structure.TREE_ENTRIES
    assert result["tree"][0] == {"path": "src/", "files": 1200}


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


ZIG_PROJECT = {
    "build.zig": "// build script\nconst std = @import(\"std\");\npub fn build(buildContext: *std.Build) void {}\n",
    "src/main.zig": "// entry point\n// parses the input\npub fn main() void {\n"
                    "    const itemCount = parseInput(rawText);\n    const lineWidth = itemCount;\n}\n",
    "src/parser.zig": "// parser\npub fn parseInput(rawText: []const u8) usize {\n"
                      "    const tokenList = splitLines(rawText);\n    return tokenList.len;\n}\n",
    "ui/View.elm": "-- the view\n-- renders the page\nviewHeader : Model -> Html\n"
                   "viewHeader pageModel = text pageModel.title\n",
    "bin/fetch": "#!/usr/bin/env python3\n# fetch dependencies\ndef fetch_all():\n    pass\n",
    "VERSION": "0.1.0\n",
    "notes.txt": "snake_case_words in_prose do_not_count\n",
    "node_modules/dep/index.zig": "// vendored\npub fn vendoredThing() void {}\n",
    "vendor/lib/main.zig": "// vendored\npub fn alsoVendored() void {}\n",
    "assets/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00",
}


def test_unknown_language_project_gets_tree_comments_naming_and_entry_points(home, tmp_path):
    """F7.4: files of an unknown extension get the universal heuristics; no extension: shebang, else text."""
    root = write(tmp_path / "zigapp", ZIG_PROJECT)
    result = json.loads(cli(home, root, "--deep", "--json").stdout)
    assert "No source files found" not in result["notes"]
    assert {item["language"] for item in result["languages"]} == {"Other", "Python", "Text"}
    assert result["entry_points"] == ["src/main.zig"]
    assert result["source_dirs"] == ["src"]
    deep = result["deep"]
    assert deep["comment_style"]["//"] >= 4 and deep["comment_style"]["--"] == 2  # "#" only from bin/fetch
    assert deep["naming"]["style"] == "camelCase"
    assert deep["analyzers"] == {"Other": "heuristic", "Python": "heuristic"}
    assert {item["name"] for item in deep["exports"]["src/parser.zig"]} == {"parseInput"}
    assert {item["name"] for item in deep["exports"]["bin/fetch"]} == {"fetch_all"}  # shebang: Python
    assert deep["source_files"] == 5  # not VERSION (text), notes.txt (prose), vendored or binary files
    tree = [entry["path"] for entry in result["tree"]]
    assert tree == ["assets/", "assets/logo.png", "bin/", "bin/fetch", "src/", "src/main.zig", "src/parser.zig",
                    "ui/", "ui/View.elm", "VERSION", "build.zig", "notes.txt"]  # vendored folders left out
    assert {"path": "src/", "files": 2} in result["tree"] and result["tree_omitted"] == 0
    text = cli(home, root, "--deep").stdout
    assert "Conventions: identifiers camelCase; files lowercase; comments //, --, #" in text
    assert ("Tree:\n  assets/ (1 file)\n    logo.png\n  bin/ (1 file)\n    fetch\n"
            "  src/ (2 files)\n    main.zig\n    parser.zig\n") in text


def test_file_tree_stays_short_on_a_huge_repository():
    paths = [f"pkg{a}/module{b}/part{c}/deeper/file{d}.zig" for a in range(10) for b in range(10)
             for c in range(10) for d in range(10)]
    entries, omitted = structure.file_tree(paths)
    assert len(entries) == structure.TREE_ENTRIES and omitted == 10 + 100 + 1000 - structure.TREE_ENTRIES
    assert entries[0] == {"path": "pkg0/", "files": 1000} and entries[1] == {"path": "pkg0/module0/", "files": 100}
    assert {f"pkg{a}/" for a in range(10)} <= {entry["path"] for entry in entries}  # the whole outline first
    assert all(entry["path"].count("/") <= structure.TREE_DEPTH for entry in entries)
    rendered = analysis.render({**run_structure(paths), "tree": entries, "tree_omitted": omitted})
    assert rendered.count("\n") < 60 and f"... {omitted:,} more" in rendered


def run_structure(paths: list[str]) -> dict:
    """The fields :func:`analysis.render` needs, for a made-up tree of ``paths``."""
    return {"project": "huge", "languages_text": "Other (100%)", "entry_points": [], "directories": 1110,
            "files": len(paths), "lines": 0, "lines_estimated": False, "source_dirs": [], "test_dirs": [],
            "doc_dirs": [], "doc_files": [], "config_files": [], "by_directory": {}, "notes": []}


def test_quick_flag_gives_structure_and_stats_only(home, tmp_path):
    """F5.3 --quick: folder structure and basic stats, no exports or patterns (no file is analysed)."""
    probe = tmp_path / "analyzer-ran"
    root = write(tmp_path / "shop", {**TS_APP, ".claude/analyzers/typescript.py":
                                     f"def analyze(path, text):\n    open({str(probe)!r}, 'a').write(path)\n"
                                     "    return {'exports': []}\n"})
    quick = cli(home, root, "--quick", "--json")
    assert quick.returncode == 0, quick.stderr
    result = json.loads(quick.stdout)
    assert result["mode"] == "quick" and "deep" not in result
    assert result["source_dirs"] == ["src"] and result["test_dirs"] == ["tests"] and result["doc_dirs"] == ["docs"]
    assert result["files"] == 8 and result["directories"] == 5 and result["lines"] > 0
    assert {"path": "src/", "files": 4} in result["tree"] and len(result["tree"]) == 14
    text = cli(home, root, "--quick").stdout
    assert "Directories: " in text and "  src/ (4 files)" in text
    assert "Tree:\n  assets/ (1 file)\n    logo.png\n" in text  # binary files are part of the layout
    assert "node_modules" not in text and "vendor" not in text
    assert not any(label in text for label in ("Exports:", "Conventions:", "Frameworks:", "Analyzers:"))
    assert not probe.exists()  # no source file was opened by an analyzer
    code, output = on_terminal(home, root, "analyze", "--deep", "--trust-analyzers", answer="y", wait_for=b"[y/N]")
    assert code == 0 and probe.exists(), output  # the probe does detect deep work (of an allowed analyzer)


def test_source_directories_of_any_language_root_config_and_docs(home, tmp_path):
    """F7.1: root, source directories (src/ lib/ app/ pkg/ whatever the language), config files, documentation."""
    root = write(tmp_path / "polyglot", {
        ".git/HEAD": "ref: refs/heads/main\n",
        "Gemfile": "source 'https://rubygems.org'\n", "go.mod": "module example.com/poly\n", "Makefile": "all:\n",
        "lib/app.rb": "# the app\nclass App\nend\n", "lib/models/user.rb": "class User\nend\n",
        "app/index.html": "<html></html>\n", "app/about.html": "<html></html>\n",
        "pkg/server/handler.go": "package server\nfunc Serve() {}\n",
        "docs/guide.md": "# Guide\n", "README.md": "# Poly\n", "CHANGELOG.md": "# Changes\n",
        "spec/app_spec.rb": "describe App do\nend\n",
    })
    result = json.loads(cli(home, root / "pkg" / "server", "--json").stdout)
    assert result["root"] == os.path.realpath(root) and result["project"] == "polyglot"
    assert result["source_dirs"] == ["app", "lib", "pkg"] and result["test_dirs"] == ["spec"]
    assert result["config_files"] == ["Gemfile", "Makefile", "go.mod"]
    assert result["doc_dirs"] == ["docs"] and result["doc_files"] == ["CHANGELOG.md", "README.md"]
    assert result["entry_points"] == ["lib/app.rb"]  # app.* is an entry point
    text = cli(home, root, "--quick").stdout.splitlines()
    assert "Source: app, lib, pkg" in text and "Docs: docs, CHANGELOG.md, README.md" in text


def test_mixed_monorepo_each_directory_uses_its_analyzer(home, tmp_path):
    """Edge case: a TypeScript directory gets the TypeScript analyzer, its siblings the heuristics."""
    root = write(tmp_path / "mono", {
        "web/src/index.ts": "export default class Shop {}\nexport const VERSION = '1'\n"
                            "export function start(port: number): void {}\n",
        "engine/core.py": "# engine\ndef compute_total(items):\n    return 0\n",
        "firmware/main.zig": "// firmware\npub fn bootDevice() void {}\n",
    })
    result = json.loads(cli(home, root, "--deep", "--json").stdout)
    assert result["by_directory"] == {"engine": "Python", "firmware": "Other", "web": "TypeScript"}
    deep = result["deep"]
    assert deep["directory_analyzers"] == {"engine": ["heuristic"], "firmware": ["heuristic"],
                                           "web": ["typescript"]}
    web = {item["name"]: item["kind"] for item in deep["exports"]["web/src/index.ts"]}
    assert web == {"Shop": "default class", "VERSION": "variable", "start": "function"}  # only the TS analyzer
    assert deep["exports"]["engine/core.py"][0]["kind"] == "def"
    assert deep["exports"]["firmware/main.zig"][0]["name"] == "bootDevice"
    text = cli(home, root, "--deep").stdout
    assert "web/ typescript" in text and "engine/ heuristic" in text and "firmware/ heuristic" in text
