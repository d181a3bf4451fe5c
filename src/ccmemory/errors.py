"""Errors raised by the core; every message says what happened and what to do next."""

from __future__ import annotations


class CCMemoryError(Exception):
    """Base class of every error ccmemory raises on purpose."""


class ValidationError(CCMemoryError, ValueError):
    """The caller passed something the store cannot accept."""


class NotFoundError(CCMemoryError, LookupError):
    """An id names nothing in the store."""


class StorageError(CCMemoryError):
    """The database could not be opened, migrated or written."""


class ToolError(CCMemoryError):
    """A call (an MCP tool's, or the viewer's) failed in a way the caller can fix; the message says how.

    The MCP server returns it as a tool error, the viewer as a 400.
    """
