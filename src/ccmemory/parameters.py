"""Parameters of a call from outside (an MCP tool call, a viewer request): declared once, then checked.

Callers outside the process send loose JSON: a model sends ``"5"`` for 5 or
``"true"`` for true, the Inspector CLI sends every ``--tool-arg`` as text, and
the MCP server does not validate ``arguments`` against a tool's schema. The
readers (:func:`text`, :func:`choice`, :func:`number`, :func:`integer`,
:func:`flag`, :func:`strings`) accept those spellings and otherwise raise
:class:`ValidationError` naming the argument.

A function declares its parameters once, in its signature, the way the MCP
SDK's FastMCP and basic-memory declare a tool::

    def memory_search(ctx, limit: Annotated[int, Param("Max hits", low=1, high=50)] = DEFAULT_LIMIT): ...

:func:`declared` reads such a signature into :class:`Parameters`, which render
the JSON schema (with ``default``, ``minimum``, ``maximum`` and ``enum``), check
and default incoming arguments, and give the docs their table, so the schema,
the checks and the docs cannot disagree.
"""

from __future__ import annotations

import inspect
import json
import math
import typing
from dataclasses import dataclass
from types import NoneType, UnionType
from typing import Any, Callable, Literal, Mapping, overload

from .errors import ValidationError

# -- readers: one argument out of a mapping, checked -------------------------------------------------


@overload
def text(args: Mapping[str, Any], name: str, *, required: Literal[True]) -> str: ...
@overload
def text(args: Mapping[str, Any], name: str, *, required: bool = False) -> str | None: ...
def text(args: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    """A string argument; blank counts as missing."""
    value = args.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise ValidationError(f"Missing required argument {name!r}")
        return None
    if not isinstance(value, str):
        raise ValidationError(f"Argument {name!r} must be text, got {type(value).__name__}")
    return value


@overload
def choice(args: Mapping[str, Any], name: str, allowed: tuple[str, ...], default: str) -> str: ...
@overload
def choice(args: Mapping[str, Any], name: str, allowed: tuple[str, ...], default: None = None) -> str | None: ...
def choice(args: Mapping[str, Any], name: str, allowed: tuple[str, ...], default: str | None = None) -> str | None:
    """A string argument that must be one of ``allowed`` (any case, surrounding blanks ignored)."""
    value = text(args, name)
    if value is None:
        return default
    value = value.strip().lower()
    if value not in allowed:
        raise ValidationError(f"Argument {name!r} must be one of {', '.join(allowed)}; got {value!r}")
    return value


def number(args: Mapping[str, Any], name: str, default: float, *, low: float = 0.0, high: float = 1.0) -> float:
    """A number in ``[low, high]``."""
    value = args.get(name)
    if value is None or value == "":
        return default
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ValidationError(f"Argument {name!r} must be a number, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValidationError(f"Argument {name!r} must be a number, got {value!r}")
    if not low <= value <= high:
        raise ValidationError(f"Argument {name!r} must be between {low:g} and {high:g}, got {value!r}")
    return float(value)


def integer(args: Mapping[str, Any], name: str, default: int, *, low: int, high: int) -> int:
    """A whole number in ``[low, high]``."""
    value = number(args, name, default, low=low, high=high)
    if value != int(value):
        raise ValidationError(f"Argument {name!r} must be a whole number, got {value!r}")
    return int(value)


def flag(args: Mapping[str, Any], name: str, default: bool = False) -> bool:
    """A boolean argument."""
    value = args.get(name)
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValidationError(f"Argument {name!r} must be true or false, got {value!r}")


def strings(args: Mapping[str, Any], name: str, *, required: bool = False, most: int = 100) -> list[str]:
    """A list of non-empty strings; a single string (or comma-separated text) becomes a list."""
    value = args.get(name)
    if isinstance(value, str):
        value = value.split(",")
    if value is None:
        value = []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValidationError(f"Argument {name!r} must be a list of strings, got {value!r}")
    items = [item.strip() for item in value if item.strip()]
    if required and not items:
        raise ValidationError(f"Missing required argument {name!r} (a list of strings)")
    if len(items) > most:
        raise ValidationError(f"Argument {name!r} takes at most {most} items, got {len(items)}; split the request")
    return items


# -- declarations ------------------------------------------------------------------------------------

#: Most items of a list parameter that declares no ``most``.
MAX_ITEMS = 100

_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array"}

Check = Callable[[Mapping[str, Any], str], Any]


@dataclass(frozen=True)
class Param:
    """What a parameter accepts beyond its Python type; its default is the signature's.

    ``low``/``high`` bound a number (every number parameter has both), ``choices``
    a string, ``most`` the items of a list. The other fields are for the few
    parameters the standard readers do not fit: ``as_sent`` hands the value over
    unchecked (``None`` when missing) because the core function it goes to checks
    it in its own words; ``check(arguments, name)`` reads it with a function of
    the tool's own; ``wire`` names the JSON types a client may send when they are
    wider than the Python type (``0``/``1`` for a flag); ``max_length`` is
    shown in the schema for text the core function bounds.
    """

    description: str = ""
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    most: int | None = None
    max_length: int | None = None
    wire: tuple[str, ...] = ()
    check: Check | None = None
    as_sent: bool = False


@dataclass(frozen=True)
class Parameter:
    """One declared parameter: its name, Python type, default (if any) and :class:`Param`."""

    name: str
    kind: Any
    item: Any
    default: Any
    required: bool
    param: Param

    @property
    def json_type(self) -> str | list[str]:
        if self.param.wire:
            return list(self.param.wire) if len(self.param.wire) > 1 else self.param.wire[0]
        return _JSON_TYPES[self.kind]

    @property
    def type_name(self) -> str:
        """The JSON type as the docs show it: ``integer``, ``array of string``, ``integer or boolean``."""
        shown = self.json_type
        if isinstance(shown, list):
            return " or ".join(shown)
        return f"array of {_JSON_TYPES[self.item]}" if shown == "array" else shown

    @property
    def most(self) -> int | None:
        return (self.param.most or MAX_ITEMS) if self.kind is list and not self.param.as_sent else self.param.most

    def default_text(self) -> str | None:
        """The default as a client would send it (``5``, ``true``, ``hybrid``), or None without one."""
        if self.required or self.default is None:
            return None
        return self.default if isinstance(self.default, str) else json.dumps(self.default)

    def range_text(self) -> str | None:
        """The bounds as the docs show them: ``1-50``, ``one of a, b``, ``at most 20 items``."""
        param = self.param
        if param.low is not None and param.high is not None:
            return f"{_number(param.low)}-{_number(param.high)}"
        if param.choices:
            return "one of " + ", ".join(param.choices)
        if self.most is not None:
            return f"at most {self.most} items"
        if param.max_length is not None:
            return f"at most {param.max_length} characters"
        return None

    def description(self) -> str:
        """The description a client sees: the declared text, then a number's range and the default."""
        param = self.param
        shown_range, default = self.range_text(), self.default_text()
        notes = [shown_range] if shown_range is not None and param.low is not None and param.high is not None else []
        if default is not None:
            notes.append(f"default {default}")
        if not notes:
            return param.description
        said = ", ".join(notes)
        return f"{param.description} ({said})" if param.description else said[0].upper() + said[1:]

    def schema(self) -> dict[str, Any]:
        """This parameter's JSON schema."""
        param = self.param
        schema: dict[str, Any] = {"type": self.json_type}
        if self.kind is list:
            schema["items"] = {"type": _JSON_TYPES[self.item]}
        if param.choices:
            schema["enum"] = list(param.choices)
        if param.low is not None:
            schema["minimum"] = param.low
        if param.high is not None:
            schema["maximum"] = param.high
        if self.kind is list and self.most is not None:
            schema["maxItems"] = self.most
        if param.max_length is not None:
            schema["maxLength"] = param.max_length
        if self.default_text() is not None:
            schema["default"] = self.default
        if self.description():
            schema["description"] = self.description()
        return schema

    def read(self, arguments: Mapping[str, Any]) -> Any:
        """This parameter's value out of ``arguments``: checked, or its default when missing."""
        param, name = self.param, self.name
        if param.as_sent:
            return arguments.get(name)
        if param.check is not None:
            return param.check(arguments, name)
        if self.kind is list:
            return strings(arguments, name, required=self.required, most=self.most or MAX_ITEMS)
        if self.kind is bool:
            return flag(arguments, name, self.default)
        if self.kind in (int, float):
            read = integer if self.kind is int else number
            return read(arguments, name, self.default, low=param.low, high=param.high)  # type: ignore[arg-type]
        if param.choices:
            value = choice(arguments, name, param.choices, self.default)
            if value is None and self.required:
                raise ValidationError(f"Argument {name!r} is required: one of {', '.join(param.choices)}.")
            return value
        value = text(arguments, name, required=self.required)
        return self.default if value is None else value


def _number(value: float) -> str:
    """A bound as people read it: ``1``, ``0.5``, ``1,000,000,000``."""
    return f"{int(value):,}" if value == int(value) else f"{value:g}"


@dataclass(frozen=True)
class Parameters:
    """The parameters a function declares after its first (the context), and whether it takes more.

    A function with ``**rest`` receives the arguments it does not declare there, as sent.
    """

    items: tuple[Parameter, ...]
    takes_rest: bool = False

    def schema(self) -> dict[str, Any]:
        """The ``inputSchema`` of an MCP tool: an object of these parameters."""
        schema: dict[str, Any] = {"type": "object", "properties": {p.name: p.schema() for p in self.items}}
        required = [p.name for p in self.items if p.required]
        if required:
            schema["required"] = required
        return schema

    def read(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments of the declaring function: every parameter checked or defaulted."""
        values = {p.name: p.read(arguments) for p in self.items}
        if self.takes_rest:
            values.update({name: value for name, value in arguments.items() if name not in values})
        return values


def declared(function: Callable[..., Any]) -> Parameters:
    """The :class:`Parameters` of ``function``'s signature, after its first parameter.

    Each one is ``name: Annotated[type, Param(...)] = default`` (``Param`` may be
    left out); ``type`` is ``str``, ``int``, ``float``, ``bool`` or ``list[...]``,
    optionally ``| None``. A parameter without a default is required. The MCP tool
    modules leave out ``from __future__ import annotations``: with real objects
    there is nothing to evaluate, which would cost about a millisecond a tool at
    every server start.
    """
    hints = inspect.get_annotations(function, eval_str=True)
    items: list[Parameter] = []
    takes_rest = False
    for position, parameter in enumerate(inspect.signature(function).parameters.values()):
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            takes_rest = True
            continue
        if position == 0:
            continue
        items.append(_parameter(function, parameter, hints[parameter.name]))
    return Parameters(tuple(items), takes_rest)


def _parameter(function: Callable[..., Any], parameter: inspect.Parameter, hint: Any) -> Parameter:
    where = f"{function.__qualname__}({parameter.name})"
    param = Param()
    if typing.get_origin(hint) is typing.Annotated:
        hint, *extras = typing.get_args(hint)
        param = next((extra for extra in extras if isinstance(extra, Param)), param)
    if isinstance(hint, UnionType) or typing.get_origin(hint) is typing.Union:
        hint = next(arg for arg in typing.get_args(hint) if arg is not NoneType)
    kind, item = typing.get_origin(hint) or hint, None
    if kind is list:
        item = (typing.get_args(hint) or (str,))[0]
    if kind not in _JSON_TYPES or (item is not None and item not in _JSON_TYPES):
        raise TypeError(f"{where}: a parameter is str, int, float, bool or a list of those, not {hint!r}")
    numeric = kind in (int, float) and not (param.as_sent or param.check)
    if numeric and (param.low is None or param.high is None):
        raise TypeError(f"{where}: a number parameter declares its range (low and high)")
    required = parameter.default is inspect.Parameter.empty
    return Parameter(parameter.name, kind, item, None if required else parameter.default, required, param)
