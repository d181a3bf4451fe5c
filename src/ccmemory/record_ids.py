"""What an id of a stored record may be made of: the one rule every door that takes ids from outside applies.

Ids are shown to the model outside the quoted block (``[a1b2c3d4]`` in SessionStart, "Memory reinforced: …",
a docmem view's headings), so an id is never text: letters, digits and ``. _ : @ + = / -``, starting with a
letter or digit, at most :data:`MAX_CHARS`. The ids ccmemory makes (UUIDs, docmem roots and the ids derived
from them, ``memory:<id>``) and Claude Code's session ids are all of that form; an import file, a team server's
row or a hook payload naming anything else is refused.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs a hook ~2 ms to import
    from typing import TypeGuard

MAX_CHARS = 200
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+=/\-]{0,199}")


def is_record_id(value: object) -> TypeGuard[str]:
    """Whether ``value`` is text an id may be (see the module docstring)."""
    return isinstance(value, str) and _ID.fullmatch(value) is not None
