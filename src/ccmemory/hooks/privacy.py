"""What must never reach the database: private spans, secrets, opted-out projects.

* ``<private>…</private>`` spans are removed (an unclosed tag hides everything after it),
  and so is ccmemory's own ``<ccmemory-context>`` block, so injected memory is not recorded back.
* Secrets are redacted by value shape (API keys and tokens of known services, private key
  blocks, JWTs, ``Authorization``/``Bearer`` values, passwords in URLs) and by name (an
  assignment, JSON/YAML field or ``--flag`` whose name has a word like *token*, *secret*,
  *password* or *api key*). Precision over recall: ``max_tokens=4096`` is left alone.
* A project opts out with a marker file, :data:`OPT_OUT_MARKER`, in its directory or any
  parent; ``CCMEMORY_DISABLE=1`` switches every hook off; :data:`RECURSION_GUARD_ENV` is set
  for the ``claude -p`` child that writes model summaries, so its own hooks do nothing.
"""

from __future__ import annotations

import os
import re
TYPE_CHECKING = False  # typing costs the capture hook milliseconds; annotations are strings
if TYPE_CHECKING:
    from typing import Mapping

REDACTED = "[REDACTED]"
OPT_OUT_MARKER = ".ccmemory-off"
KILL_SWITCH_ENV = "CCMEMORY_DISABLE"
RECURSION_GUARD_ENV = "CCMEMORY_SUMMARY_CHILD"
CONTEXT_TAG = "ccmemory-context"

# Patterns are plain strings with inline flags: ``re`` compiles (and caches) each one the
# first time a cheap substring test says it could match, so a tool call without any
# secret-looking text costs the capture hook no regex compilation at all.
_PRIVATE = r"(?is)<private>.*?(?:</private>|\Z)"
_OWN_CONTEXT = rf"(?is)<{CONTEXT_TAG}>.*?(?:</{CONTEXT_TAG}>|\Z)"
_PRIVATE_KEY = r"(?s)-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----.*?(?:-----END \1-----|\Z)"
_TOKEN_MARKERS = ("sk-", "gh", "github_pat_", "glpat-", "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA",
                  "AIPA", "xox", "AIza", "_live_", "_test_", "npm_", "hf_", "eyJ")
_TOKEN_SHAPES = (
    r"\bsk-[A-Za-z0-9_-]{20,}"                      # OpenAI, Anthropic (sk-ant-), project keys
    r"|\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"
    r"|\bglpat-[A-Za-z0-9_-]{20,}"                  # GitLab
    r"|\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b"  # AWS key ids
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}"             # Slack
    r"|\bAIza[0-9A-Za-z_-]{35}"                     # Google
    r"|\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}"  # Stripe
    r"|\bnpm_[A-Za-z0-9]{36}\b"
    r"|\bhf_[A-Za-z0-9]{30,}"                       # Hugging Face
    r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # JWT
)
_AUTH_HEADER = (
    r"(?i)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)(?:(bearer|basic|token|digest|negotiate)\s+)?"
    r"[^\s\"',;]+"
)
_BEARER = r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"
_URL_PASSWORD = r"\b([a-zA-Z][a-zA-Z0-9+.-]*://[^\s/:@]+:)([^\s/@]+)(@)"
_VALUE = r"(?:\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s\"'`,;&|)}\]]+))"
_NAMED_ASSIGNMENT = r"(?P<name>\b[A-Za-z_][A-Za-z0-9_.-]{0,80})(?P<sep>[\"']?\s*[:=]\s*)" + _VALUE
_NAMED_FLAG = r"(?P<name>(?<![\w-])--?[A-Za-z][A-Za-z0-9-]{0,60})(?P<sep>=|\s+)" + _VALUE
#: Lower-case fragments one of which a secret-looking name must contain.
_NAME_MARKERS = ("secret", "token", "pass", "pwd", "key", "credential", "auth")

_SECRET_WORDS = {"secret", "secrets", "token", "password", "passwd", "pwd", "pass", "passphrase", "apikey",
                 "credential", "credentials", "auth"}
_SECRET_PAIRS = {("api", "key"), ("access", "key"), ("private", "key"), ("secret", "key"), ("client", "secret"),
                 ("session", "key"), ("signing", "key"), ("encryption", "key"), ("master", "key")}
_NOT_A_SECRET = (
    r"(?i)^(?:\d+|true|false|null|none|nil|undefined|\[REDACTED.*|\*+|x+|\$.*|%.*|<.*|\{\{.*"
    r"|os\.environ.*|os\.getenv.*|process\.env.*|getenv.*|env\(.*)$"
)
_WORD_SPLIT = r"[_.\-]+|(?<=[a-z0-9])(?=[A-Z])"


def strip_private(text: str) -> str:
    """Remove ``<private>`` spans and ccmemory's own injected context."""
    if "<" not in text:
        return text
    lower = text.lower()
    if "<private>" in lower:
        text = re.sub(_PRIVATE, "", text)
    if f"<{CONTEXT_TAG}>" in lower:
        text = re.sub(_OWN_CONTEXT, "", text)
    return text


def _is_secret_name(name: str) -> bool:
    words = [w.lower() for w in re.split(_WORD_SPLIT, name.lstrip("-")) if w]
    if any(w in _SECRET_WORDS for w in words):
        return True
    return any(pair in _SECRET_PAIRS for pair in zip(words, words[1:]))


def _redact_named(match: re.Match[str]) -> str:
    if not _is_secret_name(match.group("name")):
        return match.group(0)
    group = next(g for g in ("dq", "sq", "bare") if match.group(g) is not None)
    value = match.group(group)
    if len(value) < 3 or re.match(_NOT_A_SECRET, value):
        return match.group(0)
    offset = match.start(group) - match.start(0)
    whole = match.group(0)
    return whole[:offset] + REDACTED + whole[offset + len(value):]


def redact_secrets(text: str) -> str:
    """Replace secret values with ``[REDACTED]``, keeping the names around them."""
    if "PRIVATE KEY" in text:
        text = re.sub(_PRIVATE_KEY, "[REDACTED PRIVATE KEY]", text)
    if any(marker in text for marker in _TOKEN_MARKERS):
        text = re.sub(_TOKEN_SHAPES, REDACTED, text)
    lower = text.lower()
    if "authorization" in lower:
        text = re.sub(_AUTH_HEADER, lambda m: m.group(1) + (m.group(2) + " " if m.group(2) else "") + REDACTED,
                      text)
    if "bearer" in lower:
        text = re.sub(_BEARER, lambda m: m.group(1) + REDACTED, text)
    if "://" in text and "@" in text:
        text = re.sub(_URL_PASSWORD, lambda m: m.group(1) + REDACTED + m.group(3), text)
    if any(marker in lower for marker in _NAME_MARKERS):
        text = re.sub(_NAMED_ASSIGNMENT, _redact_named, text)
        if "-" in text:
            text = re.sub(_NAMED_FLAG, _redact_named, text)
    return text


def sanitize(text: str) -> str:
    """Everything applied to text before it is stored: private spans first, then secrets."""
    return redact_secrets(strip_private(text))


def disabled_by_env(environ: Mapping[str, str] | None = None) -> str | None:
    """Why the environment switches hooks off (kill switch, summarizer child), or None."""
    env = os.environ if environ is None else environ
    if env.get(KILL_SWITCH_ENV, "").strip().lower() not in ("", "0", "false", "no", "off"):
        return f"{KILL_SWITCH_ENV} is set"
    if env.get(RECURSION_GUARD_ENV):
        return "running inside ccmemory's own summarizer"
    return None


def opted_out(cwd: str, environ: Mapping[str, str] | None = None) -> str | None:
    """Why this project must not be recorded (an opt-out marker above ``cwd`` or the project dir), or None."""
    env = os.environ if environ is None else environ
    for start in (cwd, env.get("CLAUDE_PROJECT_DIR")):
        marker = find_opt_out_marker(start) if start else None
        if marker:
            return f"opted out by {marker}"
    return None


def find_opt_out_marker(start: str) -> str | None:
    """The nearest :data:`OPT_OUT_MARKER` in ``start`` or any parent directory."""
    try:
        directory = os.path.realpath(start)
    except (OSError, ValueError):
        return None
    while True:
        marker = os.path.join(directory, OPT_OUT_MARKER)
        if os.path.exists(marker):
            return marker
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent
