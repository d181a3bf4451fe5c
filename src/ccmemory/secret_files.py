"""Files whose whole content is a secret, known by their name: a master key, a private key, a bare token.

``config/master.key`` holds 32 bare hex digits, ``.vault-token`` a bare token, ``~/.ssh/id_ed25519`` a private
key (which the rules find, unless it is cut): nothing in such content says it is a secret, only the file's name
does, so :mod:`ccmemory.redaction` cannot see it. Capture stores what a tool wrote to such a file, or a command
printed from it, as a line saying how much was left out (:mod:`ccmemory.observations`). Standard library only.
"""

from __future__ import annotations

import re

_NAME = re.compile(
    r"master\.key|id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?|\.passwd-s3fs"
    r"|\.?[a-z0-9_-]{0,40}[-_.]?token|secrets?(?:\.txt)?"
    r"|[a-z0-9_.-]{0,80}\.(?:key|secret|token|p12|pfx|jks|keystore|ppk|kdbx)")
#: A command that only prints a file: its output is the file's content.
_PRINT = re.compile(r"[ \t]*(?:sudo[ \t]+)?(?:cat|head|tail|less|more|bat|type|xxd|od|base64|Get-Content|gc)"
                    r"(?:[ \t]+-{1,2}[A-Za-z0-9=-]{1,20}(?:[ \t]+[0-9]{1,9})?){0,5}[ \t]+(?P<path>[^\s|;&<>`$()]{1,500})[ \t]*")


def is_secret_file(path: str) -> bool:
    """Whether ``path`` names a file whose content is a secret whole (``master.key``, ``id_ed25519``,
    ``.vault-token``, ``api.token``, ``secrets.txt``, ``server.key``, ``cert.p12``), not its public half
    (``id_ed25519.pub``)."""
    name = path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].lower().strip("'\"")
    return bool(name) and _NAME.fullmatch(name) is not None


def printed_secret_file(command: str) -> str | None:
    """The secret file a command only prints (``cat config/master.key``), whose output is its content; else None."""
    match = _PRINT.fullmatch(command.strip())
    return match.group("path") if match and is_secret_file(match.group("path")) else None


def withheld(characters: int) -> str:
    """What is stored in place of a secret file's content."""
    return f"[content of a secret file withheld: {characters} characters]"
