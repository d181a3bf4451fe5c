"""Each tool's declared parameters are what the server lists, enforces and the docs say.

A tool is declared once (``@tool`` over a function whose signature holds each
parameter's type, default and range); these tests hold the three things derived
from it to each other: the ``inputSchema`` a client gets from ``tools/list``, what
the real server refuses or fills in on ``tools/call``, and the tables in
``docs/mcp-tools.md``.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Annotated, Any, Iterator

import pytest

from ccmemory import memories, parameters, search
from ccmemory.docmem import query
from ccmemory.mcp import docs_tools, memory_tools, registry
from ccmemory.parameters import Param
from testing.mcp import project_server, RunningServer

ROOT = Path(__file__).resolve().parents[1]
TOOLS = {tool.name: tool for module in registry.TOOL_MODULES for tool in importlib.import_module(module).TOOLS}
#: A value each required parameter accepts, so that a call gets past it to the parameter under test.
REQUIRED = {"query": "anything", "content": "a note", "ids": ["00000000"], "memory_id": "00000000",
            "anchor_id": "00000000", "old_memory_id": "00000000", "new_memory_id": "00000001", "command": "view",
            "id": "nothing", "node_id": "nothing", "target_id": "nothing", "source_id": "nothing",
            "start_node_id": "nothing", "end_node_id": "nothing", "context_type": "", "context_name": "",
            "context_value": "", "mode": "append-child", "max_tokens": 100, "sql": "SELECT id FROM nodes",
            "action": "add"}
RANGED = [(tool.name, p) for tool in TOOLS.values() for p in tool.parameters.items
          if p.param.low is not None and not p.param.as_sent]
CHOSEN = [(tool.name, p) for tool in TOOLS.values() for p in tool.parameters.items
          if p.param.choices and not p.param.as_sent]


def required_arguments(tool_name: str) -> dict[str, Any]:
    return {p.name: REQUIRED[p.name] for p in TOOLS[tool_name].parameters.items if p.required}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with project_server(tmp_path_factory.mktemp("mcp-parameters"), "parameters") as running:
        yield running


@pytest.fixture(scope="module")
def listed(server: RunningServer) -> dict[str, dict[str, Any]]:
    """Each tool's ``inputSchema`` as a client gets it."""
    return {tool.name: tool.input_schema for tool in server.list_tools()}


def test_every_required_parameter_has_a_test_value():
    assert {p.name for tool in TOOLS.values() for p in tool.parameters.items if p.required} <= set(REQUIRED)
    assert RANGED and CHOSEN


def test_the_listed_schema_is_the_declaration(listed):
    assert list(listed) == list(TOOLS)
    for name, schema in listed.items():
        declared = TOOLS[name].parameters
        assert list(schema["properties"]) == [p.name for p in declared.items], name
        assert schema.get("required", []) == [p.name for p in declared.items if p.required], name
        for p in declared.items:
            spec = schema["properties"][p.name]
            assert spec.get("minimum") == p.param.low and spec.get("maximum") == p.param.high, (name, p.name)
            assert spec.get("enum", []) == list(p.param.choices), (name, p.name)
            if p.default_text() is not None:
                assert spec["default"] == p.default and f"default {p.default_text()}" in spec["description"].lower()


@pytest.mark.parametrize("tool_name, parameter", RANGED, ids=[f"{t}.{p.name}" for t, p in RANGED])
def test_the_server_refuses_what_the_schema_excludes(server, listed, tool_name, parameter):
    spec = listed[tool_name]["properties"][parameter.name]
    low, high = spec["minimum"], spec["maximum"]
    step = 1 if spec["type"] == "integer" else 0.01
    for outside in (low - step, high + step):
        answer = server.call(tool_name, {**required_arguments(tool_name), parameter.name: outside})
        assert answer.is_error, (tool_name, parameter.name, outside)
        assert f"'{parameter.name}' must be between {low:g} and {high:g}" in answer.text, answer.text
    for inside in (low, high, spec["default"]):
        answer = server.call(tool_name, {**required_arguments(tool_name), parameter.name: inside})
        assert f"'{parameter.name}' must be" not in answer.text, answer.text


@pytest.mark.parametrize("tool_name, parameter", CHOSEN, ids=[f"{t}.{p.name}" for t, p in CHOSEN])
def test_the_server_refuses_a_value_outside_the_enum(server, listed, tool_name, parameter):
    answer = server.call(tool_name, {**required_arguments(tool_name), parameter.name: "no-such-choice"})
    assert answer.is_error
    assert f"'{parameter.name}' must be one of {', '.join(listed[tool_name]['properties'][parameter.name]['enum'])}" \
        in answer.text


def test_a_missing_argument_gets_the_listed_default():
    """What a handler receives for each left-out argument is the schema's default (None without one)."""
    for tool in TOOLS.values():
        given = required_arguments(tool.name)
        received = tool.parameters.read(given)
        for p in tool.parameters.items:
            if p.name in given or p.param.as_sent:
                continue
            expected = tool.input_schema["properties"][p.name].get("default")
            assert received[p.name] == (expected if expected is not None or p.kind is not list else []), \
                (tool.name, p.name)


@pytest.mark.parametrize("tool_name, amount", [("memory_reinforce", "amount"), ("memory_deemphasize", "amount")])
def test_a_left_out_amount_moves_salience_like_the_listed_default(server, listed, tool_name, amount):
    default = listed[tool_name]["properties"][amount]["default"]
    ids = []
    for label in ("left out", "given"):
        text = server.call("memory_add", {"content": f"Salience probe {tool_name} {label}"}).text
        ids.append(text.split()[2])
    left_out = server.call(tool_name, {"memory_id": ids[0]}).text
    given = server.call(tool_name, {"memory_id": ids[1], amount: default}).text
    assert left_out.split("(salience ")[1] == given.split("(salience ")[1]


def test_memory_add_without_importance_stores_the_listed_default(server, listed):
    text = server.call("memory_add", {"content": "Importance probe with the default"}).text
    db = server.connect()
    try:
        stored = memories.get(db, text.split()[2], project_id=None)
    finally:
        db.close()
    assert stored.importance == listed["memory_add"]["properties"]["importance"]["default"]


def test_defaults_shared_with_the_core_and_the_cli_are_named_once():
    assert TOOLS["memory_search"].input_schema["properties"]["limit"]["default"] == search.DEFAULT_LIMIT
    assert TOOLS["memory_search"].input_schema["properties"]["mode"]["default"] == search.DEFAULT_MODE
    assert TOOLS["docs_search"].input_schema["properties"]["limit"]["default"] == search.DEFAULT_LIMIT
    assert TOOLS["memory_list"].input_schema["properties"]["limit"]["default"] == memories.DEFAULT_LIST_LIMIT
    assert TOOLS["memory_timeline"].input_schema["properties"]["depth_before"]["default"] == \
        memories.DEFAULT_TIMELINE_DEPTH
    assert TOOLS["memory_reinforce"].input_schema["properties"]["amount"]["default"] == \
        memories.DEFAULT_REINFORCE_AMOUNT
    assert TOOLS["memory_deemphasize"].input_schema["properties"]["amount"]["default"] == \
        memories.DEFAULT_DEEMPHASIZE_AMOUNT
    assert TOOLS["docmem_query_nodes"].input_schema["properties"]["limit"]["default"] == query.DEFAULT_LIMIT
    assert memory_tools.MAX_SEARCH_LIMIT <= search.MAX_LIMIT and docs_tools.MAX_LIMIT <= search.MAX_LIMIT
    assert memory_tools.MAX_TIMELINE_DEPTH <= memories.MAX_TIMELINE_DEPTH


def _documented() -> dict[str, dict[str, tuple[str, str]]]:
    """docs/mcp-tools.md: each tool's parameters as (default, range) cells."""
    text = (ROOT / "docs" / "mcp-tools.md").read_text(encoding="utf-8")
    tools: dict[str, dict[str, tuple[str, str]]] = {}
    for section in re.split(r"^### ", text, flags=re.M)[1:]:
        name = re.match(r"`([a-z_]+)`", section).group(1)
        rows = re.findall(r"^\| `([a-z_]+)` \| [^|]+ \| ([^|]+) \| ([^|]*) \|", section, flags=re.M)
        tools[name] = {param: (default.strip(), span.strip()) for param, default, span in rows}
    return tools


def test_the_docs_give_each_parameter_its_declared_default_and_range():
    documented = _documented()
    assert list(documented) == list(TOOLS)
    for tool in TOOLS.values():
        assert list(documented[tool.name]) == [p.name for p in tool.parameters.items], tool.name
        for p in tool.parameters.items:
            spec = tool.input_schema["properties"][p.name]
            default, span = documented[tool.name][p.name]
            if p.required:
                assert default == "required"
            elif "default" in spec:
                assert default.strip("`") == (spec["default"] if isinstance(spec["default"], str)
                                              else str(spec["default"]).lower()), (tool.name, p.name)
            if "minimum" in spec:
                assert [float(bound.replace(",", "")) for bound in span.split("-")] == \
                    [spec["minimum"], spec["maximum"]], (tool.name, p.name)


def test_a_declaration_needs_a_range_for_a_number_and_a_known_type():
    def unbounded(ctx: Any, limit: int = 5) -> str:
        return ""

    def odd(ctx: Any, when: Annotated[dict, Param("a mapping")]) -> str:
        return ""

    with pytest.raises(TypeError, match="declares its range"):
        parameters.declared(unbounded)
    with pytest.raises(TypeError, match="str, int, float, bool or a list"):
        parameters.declared(odd)
