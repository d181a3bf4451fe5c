"""What must never be stored: private spans and secrets. One function, :func:`redact`, for every write path.

The store calls :func:`redact` on everything it writes (memories, session summaries, document
chunks, docmem nodes; the strings of metadata, tags and files through :func:`redact_fields`)
and the hook log on every line, so hooks, MCP tools, the CLI and import
all get the same treatment; capture also calls it on each field before cutting it to size, so a
secret is never cut in half first.

* ``<private>…</private>`` spans are removed, and so is ccmemory's own ``<ccmemory-context>``
  block, so injected memory is not recorded back. Tags are found case-insensitively in the
  original text (never in a lower-cased copy, whose positions can differ). An unclosed tag hides
  everything after it but leaves a visible ``[private: N characters hidden, no closing tag]``,
  so a literal ``<private>`` in a command does not silently swallow the rest of an observation.
* Secrets are found by the rules in ``rules/secrets.json`` (data, not code): token shapes of known
  services, private key blocks (PEM and base64-encoded PEM), ``Authorization``/``Cookie`` header
  values, passwords in URLs, ``.pgpass``/``.netrc`` lines and command lines (``curl -u``,
  ``mysql -p``, ``sshpass -p``, ``login -p`` …), and every assignment, field, flag, header,
  subscript, call argument, XML element or YAML block whose *name* ends in a secret word
  (``PGPASSWORD=…``, ``"apiKey": …``, ``--token …``, ``define('DB_PASSWORD', …)``,
  ``client-key-data: …``, ``password:\\n  value``; not ``token_count``, ``--token-file``,
  ``password_hash``). What counts as a secret name is the ``names`` table of the rule file. Prose
  names them too, in other languages as well (``пароль от базы — …``, ``Das Passwort ist …``,
  ``密码是 …``): the value must then not be a plain word (:func:`_prose_value`).
* A table's cell is a secret when the table's header names its column (a CSV or Markdown table, ``psql``
  output, an SQL ``INSERT``): :mod:`ccmemory.secret_tables`.
* Escapes are decoded before scanning (JSON/C backslash escapes, ``\\uXXXX``, percent-encoding,
  HTML entities, shell line continuations; up to :data:`MAX_DECODE_ROUNDS` nested layers): the decoded text is scanned too
  and each hit is mapped back to the span of the original text it came from, so
  ``{\\"db_password\\": \\"…\\"}`` and ``db%5Fpassword=…`` are redacted where they stand.
* Text that is not plain ASCII is scanned again as the rules should read it (:func:`_normalized`: NFKC,
  :data:`INVISIBLE` characters dropped), so ``ｐａｓｓｗｏｒｄ＝…`` and a token split by a zero-width
  space are found; each hit is mapped back to its span of the original, nothing else changes.
* Base64 whose decoded text holds a secret (an env file, a token), in the standard alphabet or the
  URL-safe one (``-`` and ``_``), is redacted whole (:func:`_base64_spans`, at most
  :data:`MAX_BASE64_DECODE` characters of a blob decoded), and so is every value of a Kubernetes
  ``kind: Secret``'s ``data`` and ``stringData`` (:func:`_kubernetes_spans`).
* A value is kept only when it is plainly not a credential: a bare variable reference
  (``$DB_PASSWORD``, ``${X}``, ``%X%``, ``$(cmd)``), a template (``{{ … }}``, ``<your-token>``), a
  mask (``***``, ``(sensitive value)``, a token mostly stars: ``gho_****…abcd``), a type (``str``), a
  short number, or, after an unquoted name, code
  (``getpass()``, ``settings.API_KEY``, ``os.environ[…]``) or a file path. ``$ecr3t!``, ``%Qz9…``
  and ``correct.horse.battery.staple`` are secrets.

Linear time: every rule pattern has bounded repetition only (a test checks the parsed patterns),
so one match attempt reads at most a fixed number of characters; each rule runs only when one of
its keywords occurs in the text (the named rules' keywords are derived from the ``names`` table,
so no secret word can be missing from the gate); a rejected candidate resumes the scan past its
name. Standard library only and compiled lazily: the capture hook imports this module on every
tool call, under any Python from 3.9.
"""

from __future__ import annotations

import json
import operator
import os
import re
from bisect import bisect_right

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable, Iterator

REDACTED = "[REDACTED]"
CONTEXT_TAG = "ccmemory-context"
RULES_PATH = os.path.join(os.path.dirname(__file__), "rules", "secrets.json")
#: Nested layers of escaping undone before scanning (a JSON string holding escaped JSON is two).
MAX_DECODE_ROUNDS = 3
#: Lines and characters a YAML block value under a secret name may span.
MAX_BLOCK_LINES, MAX_BLOCK_CHARS = 500, 100_000
#: Characters a config-line value (``password: correct horse battery``) may run to its line's end.
MAX_LINE_VALUE = 1000
#: Characters that show as nothing, put inside a secret to hide it from the rules: zero-width space,
#: non-joiner and joiner, word joiner, zero-width no-break space (byte order mark), soft hyphen.
INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
#: Most characters of one base64 blob decoded to look inside it (its first ones, when it is longer).
MAX_BASE64_DECODE = 16_384
#: Shortest base64 run decoded: 18 bytes, ``DB_PASSWORD=s3cr3t``.
MIN_BASE64 = 24

_WORD_SPLIT = re.compile(r"[_.\-\s]+|(?<=[a-z0-9])(?=[A-Z])")
_PLACEHOLDER = re.compile(
    r"\d{1,3}|\[REDACTED.{0,40}|\[[A-Z][A-Z _\-]{2,30}\]|\[private: .{0,80}|\*{1,100}|[xX]{3,100}|\.{3}|…|-{1,100}"
    r"|\$(?:[A-Za-z_]{1,100}|[A-Z_][A-Z0-9_]{0,100})"  # $DB_PASSWORD, $password: a shell or PHP variable
    r"|\$\{[^{}\n]{1,200}\}?|\$\{\{.{0,300}|\$\(.{0,1000}"  # ${X}, ${{ secrets.X }}, $(command)
    r"|%[A-Za-z_][A-Za-z0-9_]{0,100}%|%\(?[A-Za-z_]{0,40}\)?[sdrfix]"  # %X% (Windows), %s / %(name)s
    r"|<[\w .:/\-]{1,100}>?|\{\{.{0,1000}|\{[A-Za-z_][A-Za-z0-9_.]{0,100}\}"  # <token>, <insert key>, {{ x }}, {name}
    r"|<%.{0,1000}|%=?"  # <%= ENV["DB_PASSWORD"] %>: an ERB template (and its "%=" when read from inside the tag)
    r"|(?i:(?:your|insert|enter|replace)[_\-][a-z0-9_\-]{1,100}|[a-z0-9_\-]{1,100}[_\-]here)"  # YOUR_API_KEY_HERE
    r"|//.{0,1000}|[A-Za-z0-9]-[A-Za-z0-9]"  # the rest of an address after its "https:"; a range of characters (A-Z)
    r"|[&*][a-z_][a-z0-9_\-]{0,100}"  # a YAML anchor or alias alone (password: &default_password, *dbpw)
    r"|\((?:sensitive|protected|hidden|redacted|masked|secret)(?:[ \t]value)?\)?"  # (sensitive value): terraform's mask
    r"|\([A-Za-z]{1,40}"  # the first word of a remark in brackets: "Secret access key: (shown once)"
    r"|[A-Za-z0-9_\-]{0,20}(?:\.{3}|…)[A-Za-z0-9]{0,6}"  # a key elided or masked to its ends: sk_test_..., sk-...Wx3Q
    r"|[•●]{3,100}(?:[ \t]{1,4}\([A-Za-z ]{1,40}\))?"  # a mask of bullets: •••••••• (hidden)
    r"|\*{3,100}@.{0,300}"  # an address's password masked by the program that shows it: __token__:****@host
    r"|![A-Za-z]{1,40}(?:[ \t]{1,4}[|>][-+]?)?"  # a YAML tag that reads the value elsewhere: !ENV ${X}, !vault |
    r"|(?:op|vault|secretsmanager|ssm|gcpsm|azkv|doppler|infisical)://.{1,300}"  # a secret manager's reference
    # a package's version or range, as lockfiles and manifests give it (jsonwebtoken: "npm:^9.0.0")
    r"|(?:npm:|workspace:|patch:)?(?:[\^~]|[<>]=?|=)?v?\d{1,6}(?:\.(?:\d{1,6}|[xX*])){1,3}(?:-[0-9A-Za-z.\-]{1,40})?"
)
#: A YAML list item or key that is a name: snake or camel case or words joined by hyphens (``- db_password``,
#: ``registry-credentials:``), not a password of letters and digits (``- hunter2``).
_NAME_LINE = re.compile(r"(?P<item>-[ \t]{1,8})?(?:[a-z][a-z0-9]{0,40}(?:[_\-][a-z0-9]{1,40}){1,8}"
                        r"|[a-z][a-z0-9]{0,40}(?:[A-Z][a-z0-9]{1,40}){1,8}|[a-z]{1,40})(?(item)|:)")
#: A key shown with its body masked (``ghp_XXXX…``, ``sk_live_xxxx…``, ``AKIAXXXX…``): a template's, not a key.
_MASKED = re.compile(r"[A-Za-z0-9_\-]{0,16}?(?:[xX]{8,300}|\*{4,300})")
#: The end of an ARN before its resource: ``arn:aws:secretsmanager:eu-west-1:123456789012:secret:``.
_ARN_PREFIX = re.compile(r"arn:[a-z0-9\-]{1,20}:[a-z0-9\-]{1,60}:[a-z0-9\-]{0,30}:\d{0,12}:$")
_CALL = re.compile(r"(?:\[\])?[A-Za-z_$][A-Za-z0-9_$]{0,100}(?:(?:\.|::)[A-Za-z_$][A-Za-z0-9_$]{0,100}){0,10}[(\[].{0,1000}")
_DOTTED = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]{0,100}(?:\.[A-Za-z_$][A-Za-z0-9_$]{0,100}){1,10}")
_CONSTANT = re.compile(r"[A-Z][A-Z0-9]{0,100}_[A-Z0-9_]{1,100}")
#: A variable named in snake or camel case (``api_key``, ``dbPassword``; not ``Password1``, a password of one word).
_VARIABLE = re.compile(r"[a-z][a-z0-9]{0,40}(?:_[a-z0-9]{1,40}){1,8}|[a-z][a-z0-9]{0,40}(?:[A-Z][a-z0-9]{1,40}){1,8}")
#: A PowerShell command by its approved verb (``$cred = New-Object …``, ``$pw = Read-Host -AsSecureString``).
_CMDLET = re.compile(r"(?:Get|Set|New|Read|ConvertTo|ConvertFrom|Import|Export|Invoke|Add|Remove|Select|Out|Write|Join"
                     r"|Split|Test|Start|Resolve|Find|Copy|Format)-[A-Z][A-Za-z]{1,60}")
#: A reference to a resource's attribute: a type named in snake case, then a name and an attribute or more
#: (``random_password.db.result``, ``aws_db_instance.main.password``); a password of words has no ``_`` in its first.
_RESOURCE_REFERENCE = re.compile(r"[a-z][a-z0-9]{0,40}_[a-z0-9_]{1,80}(?:\.[a-z_][a-z0-9_\-]{0,80}){2,8}")
_PATH = re.compile(
    r"(?:~|\.{1,2}|[A-Za-z]:)?[/\\][A-Za-z0-9_.\-/\\]{0,300}"
    r"|[A-Za-z0-9_.\-/\\]{0,300}\.(?:pem|key|crt|cer|csr|p12|pfx|jks|keystore|json|ya?ml|txt|env|gpg|asc|ppk|pub"
    r"|der|kdbx|cfg|conf|ini|toml|properties)"
)
#: A bracket at one end of a value without its pair inside belongs to the text around it.
_CLOSING = {"(": ")", "[": "]", "{": "}", "<": ">"}
_OPENING = {closing: opening for opening, closing in _CLOSING.items()}
_EMAIL = re.compile(r"@[A-Za-z0-9\-]{1,63}\.[A-Za-z]")
_ASSIGNMENT = re.compile(r"=[^=]")
#: How far a rule read backwards (``before``) looks from its keyword, where its sentence starts (not at "! ":
#: passwords end with "!" more often than sentences before a secret word do), and what punctuation around a word
#: is not part of the value.
MAX_BEFORE_CHARS = 300
_SENTENCE_ENDS = (". ", "? ", "\n")
_NON_SPACE = re.compile(r"\S{1,300}")
_AROUND_WORD = "\"'`()[]{}<>,;:.«»“”„"
_FINGERPRINT_LABEL = re.compile(r"(?i)(?:sha\d{1,3}|md5):$")
_UNPADDED_BASE64 = re.compile(r"[A-Za-z0-9+/]{16,199}={1,2}")
#: The rest of a token on the next line (:func:`_continued`): after the value's closing quote, if any, the next
#: line's indentation, its opening quote, the rest, its closing quote.
_CONTINUATION = re.compile(r"""["']?[ \t]{0,8}\r?\n(?P<indent>[ \t]{0,40})(?P<open>["']?)(?P<rest>[A-Za-z0-9+/_\-]{8,500}={0,2})"""
                           r"""(?P<close>["']?)(?=[\s,;)\]}]|$)""")
#: Most lines a wrapped or split token is followed over.
MAX_CONTINUED_LINES = 8
_PUBLIC = re.compile(r"(?i)(?<![a-z])public[ \t-]{1,2}$")
#: After a secret word, what makes it part of a file or an identifier: ``token.py``, ``key_id``, ``secret/``.
_NAME_GOES_ON = re.compile(r"[A-Za-z]{0,2}[._/\\-]\w")
#: What prose says after a secret word that is no secret: the settings of a token (``ttl=3600&rotate=true``,
#: ``expires_in=86400``), a version (``v9.8.17``), the keys that show a password (``Ctrl+Shift+Esc``, ``Fn+F12``),
#: a masked one (``••••••••``). With an address without a user (a reset page) and code in backquotes
#: (``password = getpass.getpass()``, its assignment read by the code rules), :func:`_checked` leaves these.
_SAID_ABOUT_A_SECRET = re.compile(
    r"[a-z][a-z0-9_]{0,40}=[^\s]{0,200}|v?\d{1,4}(?:\.\d{1,4}){1,3}|(?i:(?:ctrl|shift|alt|option|cmd|command|control"
    r"|fn|meta|super|win)\+){1,4}[A-Za-z0-9]{1,6}|(.)\1{3,99}")
_UUID = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")
_ID_WORD = re.compile(r"(?i)(?<![a-z])id(?![a-z])")
_HASH_WORD = re.compile(r"(?i)(?<![a-z])(?:commit|sha\d{0,3}|hash|checksum|digest|md5|fingerprint|revision)")
#: A name made of words: parts joined by + - _ or ., each capitalised or small words (every run of small letters
#: two or more long, a number of up to four digits after any: ``OAuth2ClientCredentialsProvider``, ``loadKeyPair256``,
#: ``Ctrl``, ``P2``; not ``wGheSbaXk``), or a number. Each run of small letters is taken whole (the lookahead), so a
#: part is read one way only.
_NAME_JOINS = re.compile(r"[+\-_.]")
_NAME_PART = re.compile(r"(?:[A-Z]{0,4}[a-z]{2,40}(?![a-z])[0-9]{0,4}){0,10}[A-Z]{0,4}[0-9]{0,4}|[a-z]{1,100}[0-9]{0,2}|[0-9]{1,4}")
_CAMEL_WORD = re.compile(r"[A-Z]?[a-z]{3,}")
_YAML_KEY = re.compile(r"[ \t]{0,80}(?:-[ \t]{1,8})?[\"']?([A-Za-z0-9_$\-]{1,80})[\"']?[ \t]{0,8}:(?:[ \t]|$)")
_EXTEND = re.compile(r"[^\s\"'`,;&|)}\]<>]*")
_NAME_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
_MAX_NAME_BACK = 80
_ESCAPE = re.compile(
    r"\\(?:u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|[\\\"'/nrtbf]|\r?\n[ \t]{0,200})|%[0-9A-Fa-f]{2}"
    r"|&(?:quot|apos|amp|lt|gt|#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6});"
)
_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f"}
_NOT_ASCII = re.compile(r"[^\x00-\x7f]+")
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/]{%d,}={0,2}" % MIN_BASE64)
#: Base64 in the URL-safe alphabet (``base64.urlsafe_b64encode``, JWT-style segments), read by the same rules.
_BASE64_URL = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9_\-]{%d,}={0,2}(?![A-Za-z0-9+/])" % MIN_BASE64)
#: Widths ``base64`` (76) and PEM or ``openssl base64`` (64) wrap their output at.
_BASE64_WRAPS = (64, 76)
_K8S_KIND = re.compile(r"""^[ \t]{0,80}(?:-[ \t]{1,8})?["']?kind["']?[ \t]{0,8}:[ \t]{0,8}["']?Secret["']?[ \t]{0,8}\r?$""",
                       re.MULTILINE)
_K8S_DATA = re.compile(r"""^([ \t]{0,80}(?:-[ \t]{1,8})?)["']?(?:data|stringData)["']?[ \t]{0,8}:[ \t]{0,8}\r?$""",
                       re.MULTILINE)
_YAML_ENTRY = re.compile(r"""([ \t]{1,80})(?:"[^"\n]{1,253}"|'[^'\n]{1,253}'|[^\s#:"'][^:\n]{0,252}):[ \t]{1,8}(\S[^\n]{0,100000})""")
_DOCUMENT_START = re.compile(r"^---", re.MULTILINE)
_K8S_JSON_KIND = re.compile(r'"kind"[ \t]{0,8}:[ \t]{0,8}"Secret"')
_K8S_JSON_DATA = re.compile(r'"(?:data|stringData)"[ \t]{0,8}:[ \t]{0,8}\{')
_JSON_ENTRY = re.compile(r'\s{0,200}"(?:[^"\\\n]|\\.){1,300}"\s{0,20}:\s{0,20}"((?:[^"\\\n]|\\.){0,100000})"\s{0,20}(,?)')
_ENTITIES = {"quot": '"', "apos": "'", "amp": "&", "lt": "<", "gt": ">"}


class _Rules:
    """The parsed rule file; patterns compile on first use."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.rules: list[dict[str, Any]] = data["rules"]
        self.by_id = {rule["id"]: rule for rule in self.rules}
        self.blocks: list[dict[str, Any]] = data["blocks"]
        names = data["names"]
        self.words = set(names["words"])
        self.pairs = {tuple(pair) for pair in names["pairs"]}
        self.not_secret = set(names["not_secret_values"])
        self.value_suffixes = set(names["value_suffixes"])
        self.glued = tuple(names["glued_suffixes"])
        self.glued_not_secret = set(names["glued_not_secret"])
        self.key_not_secret = set(names["key_qualifiers_not_secret"])
        self.key_prefixes = set(names["glued_key_prefixes"])
        self.code_objects = set(names["code_objects"])
        self.schema_keys = set(names["schema_keys"])
        self.call_not_secret = set(names["call_prefixes_not_secret"])
        self.secret_prefixes = tuple(names["secret_name_prefixes"])
        self.prefix_rest_not_secret = set(names["prefix_rest_not_secret"])
        single = self.words | set(self.glued) | {"key"}
        self.anchors = _minimal_anchors(single | {pair[0] for pair in self.pairs if not single & set(pair)})
        self.compiled: dict[str, re.Pattern[str]] = {}
        self.gates = [frozenset(self.keywords(rule)) for rule in self.rules]
        self.all_keywords = sorted(frozenset().union(*self.gates))
        #: Each keyword with its rarest pair of characters (:func:`_rarest_pair`), checked first.
        self.keyword_pairs = [(keyword, _rarest_pair(keyword)) for keyword in self.all_keywords]

    def pattern(self, source: str) -> re.Pattern[str]:
        compiled = self.compiled.get(source)
        if compiled is None:
            compiled = self.compiled[source] = re.compile(source)
        return compiled

    def keywords(self, rule: dict[str, Any]) -> list[str]:
        """What must occur (lower-cased) in a text for ``rule`` to run: for named rules, every secret word; for a
        rule with ``keywords_of``, the keywords of the rule it names (one list for a value read either way)."""
        if rule.get("anchors") == "names":
            return self.anchors
        return self.by_id[rule["keywords_of"]]["keywords"] if "keywords_of" in rule else rule["keywords"]


#: Characters from the most to the least frequent in code and prose, roughly: a pair of late ones is rare.
_COMMON_FIRST = " etaoinsrlhdcumpfgybw\n.,_-/\"'=:()0123456789vkx;[]{}<>$#@!?*+&%|\\~`^jqz"
_RANK = {character: rank for rank, character in enumerate(_COMMON_FIRST)}


def _rarest_pair(keyword: str) -> str | None:
    """The keyword's two adjacent characters least likely in a text (None for a single character).

    A text holding the keyword holds each of its pairs, so a keyword whose rarest pair is not among the
    text's pairs is absent: one set lookup instead of a search of the whole text (:func:`_present`).
    """
    pairs = [keyword[i:i + 2] for i in range(len(keyword) - 1)]
    unknown = len(_COMMON_FIRST)
    return max(pairs, key=lambda p: _RANK.get(p[0], unknown) + _RANK.get(p[1], unknown)) if pairs else None


def _present(table: _Rules, lower: str) -> set[str]:
    """The keywords that occur in ``lower``: the ones whose rarest pair does are searched for.

    Searching the text for every keyword (several hundred) was most of a scan's cost; the text's set of
    character pairs, made in one pass at C speed, rules out all but a few dozen.
    """
    pairs = set(map(operator.add, lower, lower[1:]))
    return {keyword for keyword, pair in table.keyword_pairs if (pair is None or pair in pairs) and keyword in lower}


def _minimal_anchors(words: set[str]) -> list[str]:
    """The words no other word of the set occurs in: finding these finds every name ending in any of them."""
    return sorted(w for w in words if not any(o != w and o in w for o in words))


_loaded: _Rules | None = None


def rules() -> _Rules:
    """The secret rules, read once per process from :data:`RULES_PATH`."""
    global _loaded
    if _loaded is None:
        with open(RULES_PATH, encoding="utf-8") as handle:
            _loaded = _Rules(json.load(handle))
    return _loaded


_TAGS: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {}


def strip_private(text: str) -> str:
    """Remove ``<private>`` spans and ccmemory's own injected context.

    Tags match case-insensitively on the original text. An unclosed tag hides the rest of the
    text and leaves ``[private: N characters hidden, no closing tag]`` in its place, so the
    reader sees that something was withheld (a command that merely mentions ``<private>``).
    """
    if "<" not in text:
        return text
    for tag in ("private", CONTEXT_TAG):
        patterns = _TAGS.get(tag)
        if patterns is None:
            patterns = _TAGS[tag] = (re.compile(f"<{tag}>", re.IGNORECASE), re.compile(f"</{tag}>", re.IGNORECASE))
        opening, closing = patterns
        start = opening.search(text)
        if start is None:
            continue
        kept: list[str] = []
        position = 0
        while start is not None:
            kept.append(text[position:start.start()])
            end = closing.search(text, start.end())
            if end is None:
                kept.append(f"[private: {len(text) - start.start():,} characters hidden, no closing tag]")
                position = len(text)
                break
            position = end.end()
            start = opening.search(text, position)
        kept.append(text[position:])
        text = "".join(kept)
    return text


def is_secret_name(name: str) -> bool:
    """Whether a field, variable or flag name ends in a secret word (``DB_PASSWORD``, ``apiKey``, ``--token``)."""
    known = _name_verdicts.get(name)
    if known is None:
        if len(_name_verdicts) > 10_000:
            _name_verdicts.clear()
        known = _name_verdicts[name] = _judge_name(name)
    return known


_name_verdicts: dict[str, bool] = {}


def _judge_name(name: str) -> bool:
    """The name's last word (after value-like suffixes: ``_data``, ``_b64``, ``_prod`` …) is a secret word.

    Secret words are the ``words`` of the table, the last word of a ``pairs`` entry after its
    first, ``<anything>_key`` unless the qualifier says what kind of non-secret key it is
    (``sort_key``, ``public_key``), and glued names (``PGPASSWORD``, ``SSHPASS``, ``apikey``).
    """
    table = rules()
    lowered = name.strip("-$@:'\"`[]").lower()
    prefix = next((p for p in table.secret_prefixes if lowered.startswith(p)), None)
    if prefix and lowered[len(prefix):] not in table.prefix_rest_not_secret:  # TF_TOKEN_app_terraform_io: a host after
        return True
    words = [w.lower() for w in _WORD_SPLIT.split(name.strip("-$@:'\"`[]")) if w]
    words = [w if w in table.value_suffixes else w.rstrip("0123456789") for w in words]
    words = [w for w in words if w]
    if not words:
        return False
    if _secret_ending(words, table):
        return True
    while len(words) > 1 and words[-1] in table.value_suffixes:
        words.pop()
        if _secret_ending(words, table):
            return True
    return False


def _secret_ending(words: list[str], table: _Rules) -> bool:
    last = words[-1]
    if last in table.words:
        return True
    if len(words) > 1:
        if (words[-2], last) in table.pairs:
            return True
        if last == "key" and words[-2] not in table.key_not_secret:
            return True
    if last in table.glued_not_secret:
        return False
    if last.endswith("key") and last[:-3] in table.key_prefixes:
        return True
    return any(last.endswith(word) and last != word for word in table.glued)


def plausible_value(value: str, *, expressions: bool = False) -> bool:
    """Whether a value could be a secret: not a placeholder or variable (``$TOKEN``, ``<key>``, ``***``).

    With ``expressions`` (an unquoted value after a name) code and file paths are refused too
    (``get_password()``, ``settings.TOKEN``, ``os.environ[…]``, ``./key.pem``): such text is more
    likely a program than a credential. A dotted value counts as code only when it reads like
    one (``self.password``, ``config.db.password``), not ``correct.horse.battery.staple``.
    """
    value = value.strip()
    if value[-1:] in _OPENING and _OPENING[value[-1]] not in value:  # "<user:password>": the bracket is the text's
        value = value[:-1]
    if len(value) < 3 or value.lower() in rules().not_secret or _PLACEHOLDER.fullmatch(value):
        return False
    if _CONSTANT.fullmatch(value) and is_secret_name(value):  # "SEGMENT_WRITE_KEY": the variable holding it
        return False
    if value.count("*") >= 4 and value.count("*") * 2 >= len(value):  # gho_****…abcd: already masked
        return False
    return not (expressions and (_is_code(value) or _PATH.fullmatch(value) or value.startswith("--")))


def _is_code(value: str) -> bool:
    value = value.lstrip("(").rstrip("!,;")  # (Get-Secret -Name …), process.env.SESSION_SECRET!,
    if value.startswith(":"):  # after a scope operator's "::": auth::tests::rejects_bad_signature
        return True
    if _CALL.fullmatch(value) or _CMDLET.fullmatch(value):
        return True
    if (_CONSTANT.fullmatch(value) or _VARIABLE.fullmatch(value)) and is_secret_name(value):
        return True  # 'x-api-key': API_KEY, OpenAI(api_key=api_key): the constant or variable that holds it
    if not _DOTTED.fullmatch(value):
        return False
    if _RESOURCE_REFERENCE.fullmatch(value):  # random_password.db.result: Terraform's type.name.attribute
        return True
    parts = value.split(".")
    head = parts[0].lstrip("$_")
    # A one-letter object is code in lower case only (e.target): E.FIQdTt1ehH4 is a password.
    known = head in rules().code_objects if len(head) == 1 else head.lower() in rules().code_objects
    return known or is_secret_name(parts[-1]) or any(_CONSTANT.fullmatch(part) for part in parts)


def _opaque(value: str) -> bool:
    """A credential after a bare word looks machine-made: not a plain word (``Bearer authentication``)."""
    return plausible_value(value) and not value.isalpha()


def _mixed_letters(value: str) -> bool:
    """Letters alone, at least 8, with a capital after a small letter twice or more (``zqpGHoPZgPDc``,
    ``myDogRex``): a generated or made-up password, not a word (``Incorrect``) or one name (``PostgreSQL``)."""
    if len(value) < 8 or not value.isalpha():
        return False
    return sum(a.islower() and b.isupper() for a, b in zip(value, value[1:])) >= 2


def _prose_value(value: str, *, expressions: bool = False) -> bool:
    """A credential after a secret word in prose: not a plain word ("the token is invalid"); with ``expressions``
    not code or a path either (``config.api_key``)."""
    return plausible_value(value, expressions=expressions) and (not _word(value) or _mixed_letters(value))


def _word(value: str) -> bool:
    """Letters only, the marks that scripts such as Devanagari write on them included (``नहीं``)."""
    if value.isalpha():
        return True
    if value.isascii():
        return False
    import unicodedata

    return bool(value) and value[0].isalpha() and all(c.isalpha() or unicodedata.category(c)[0] == "M" for c in value)


def _machine_made(value: str) -> bool:
    """Letters and digits mixed, at least 8 characters: a credential, not a word of prose (``password field``)."""
    return len(value) >= 8 and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _machine_made_bare(value: str) -> bool:
    """A machine-made value standing in a command or code: not a path, code or ``CONSTANT_NAME`` either."""
    return _machine_made(value) and not _CONSTANT.fullmatch(value) and plausible_value(value, expressions=True)


def _strong_value(value: str) -> bool:
    """A value the rule's pattern found shaped like a generated or made-up secret (a letter, and a digit with a
    symbol or mixed case), that is none of: an address (nor the rest of one after its ``:``), an email, a path,
    code, an assignment (``retries=3&timeout=30s``, ``algorithms=``; base64's closing ``=`` aside), a value
    naming a hash (``2.0.0-beta+exp.sha.5114f85``), a publishable key, a name made of words (``Ctrl+Shift+P2``,
    ``KeyRotatorV2.run``, ``release-2024-v2``)."""
    if "://" in value or value.startswith("/") or _EMAIL.search(value) or _ASSIGNMENT.search(value):
        return False
    if _HASH_WORD.search(value):
        return False
    if value.startswith(("pk_live_", "pk_test_")):  # a publishable key is public by design
        return False
    if value.endswith("=") and len(value) % 4 and not _random_base64(value):
        return False
    if all(_NAME_PART.fullmatch(part) for part in _NAME_JOINS.split(value)):
        return False
    return plausible_value(value, expressions=True)


def _random_base64(value: str) -> bool:
    """Base64 of random bytes whose length base64 never has (a key cut or mistyped when pasted): 16 characters
    or more of its alphabet, random as :func:`_random_token` reads them, then one or two ``=``. A closing
    ``=`` of another length is an assignment's (``algorithms=``)."""
    return bool(_UNPADDED_BASE64.fullmatch(value)) and _random_token(_alphanumerics(value))


def _base64_private_key(value: str) -> bool:
    import binascii

    head = value[:120]
    head = head[:len(head) - len(head) % 4]
    try:
        return b"PRIVATE KEY" in binascii.a2b_base64(head)
    except (binascii.Error, ValueError):
        return False


def _basic_credential(value: str) -> bool:
    """Base64 of ``user:password`` (an HTTP Basic credential), not a word after "basic" (``Basic authentication``)."""
    import binascii

    try:
        decoded = binascii.a2b_base64(value + "=" * (-len(value) % 4)).decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    user, colon, password = decoded.partition(":")
    return bool(user and colon and password) and decoded.isprintable()


def _snowflake(part: str) -> bool:
    """Whether the first part of a dotted token is the base64 of a Discord id (17 to 20 digits), as a bot
    token's is: what tells one from any other three-part token when no word says "discord"."""
    import binascii

    try:
        decoded = binascii.a2b_base64(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        return False
    return decoded.isdigit() and 17 <= len(decoded) <= 20


def _alphanumerics(value: str) -> str:
    """The letters and digits of a token in base64 or its URL-safe alphabet, what :func:`_random_token` reads."""
    return "".join(c for c in value if c.isalnum())


def _random_token(body: str, *, needs_digit: bool = True) -> bool:
    """A random base62 body: upper- and lower-case letters each at least a fifth of it, a digit (unless not
    ``needs_digit``), and less than half of it in camelCase words of three letters or more.

    A camelCase identifier is made of such words (``ThisIsALongName2WithNumbers``); in a random body, where
    two letters in five are upper-case, a run of three lower-case letters is rare.
    """
    floor = len(body) // 5
    upper = sum(c.isupper() for c in body)
    digits = sum(c.isdigit() for c in body)
    if upper < floor or len(body) - upper - digits < floor or (needs_digit and not digits):
        return False
    return sum(len(word) for word in _CAMEL_WORD.findall(body)) * 2 < len(body)


def _luhn(value: str) -> bool:
    """Whether the digits of ``value`` end in the Luhn check digit every payment card number has (one grouped number
    in ten passes by chance: the rule asks a network's first digits and the printed grouping too)."""
    digits = [int(c) for c in reversed(value) if c.isdigit()]
    total = sum(d if i % 2 == 0 else (d * 2 - 9 if d > 4 else d * 2) for i, d in enumerate(digits))
    return total % 10 == 0


def _accessor(name: str) -> bool:
    """A call whose first word reads a secret rather than sets it (``getPassword``, ``get_secret``, ``getpass``)."""
    words = _WORD_SPLIT.split(name.rsplit(".", 1)[-1])
    return bool(words) and words[0].lower() in rules().call_not_secret


def _secret_group(match: re.Match[str]) -> str | int:
    for group in ("secret", "tq", "dq", "sq", "bq", "bare"):
        if group in match.re.groupindex and match.group(group) is not None:
            return group
    return 0


#: The ``check`` a rule may name (tests/test_redaction.py holds every rule to these); ``name`` is the default
#: of a named rule: the name is a secret name and the value plausible.
CHECKS = frozenset({"value", "opaque", "prose-value", "machine-made", "machine-made-expression", "base64-private-key",
                    "basic-credential", "random-token", "discord-snowflake", "name-call", "name", "name-table",
                    "name-prose", "name-machine", "name-machine-literal", "strong-value", "card-number", "mnemonic"})


def _checked(check: str | None, match: re.Match[str], group: str | int, value: str, text: str) -> bool:
    if check is None:
        return True
    if check == "value":
        return plausible_value(value)
    if check == "opaque":
        return _opaque(value)
    if check == "prose-value":
        if _SAID_ABOUT_A_SECRET.fullmatch(value) or ("://" in value and "@" not in value) or " = " in value:
            return False
        if _UUID.fullmatch(value) and _ID_WORD.search(text, max(0, match.start() - 12), match.start(group)):
            return False  # "el ID de la clave es 7fd5a5e3-…", "ID ключа: …": the key's id, not the key
        lead = text[match.start():match.start(group)].rstrip(" \t")
        if " " in lead and ((lead[-1:] in ("=", "＝") and lead[-2:-1].isalnum()) or lead[-2:] in ('":', "':")):
            return False  # "passwords with Argon2id (m=65536", 'Password reset {"user_id":1182': another's value
        return _prose_value(value, expressions=True) if group == "bare" else plausible_value(value)
    if check == "machine-made":
        return _machine_made(value) and plausible_value(value)
    if check == "machine-made-expression":
        return _machine_made_bare(value)
    if check == "base64-private-key":
        return _base64_private_key(value)
    if check == "basic-credential":
        return _basic_credential(value)
    if check == "random-token":
        return _random_token(value)
    if check == "strong-value":  # a key's fingerprint (SHA256:…, MD5:…) is public, a commit or a checksum no secret
        start = match.start(group)
        return (_strong_value(value) and not _FINGERPRINT_LABEL.search(text[max(0, start - 8):start])
                and not _HASH_WORD.search(text, match.start(), start))
    if check == "discord-snowflake":
        return _snowflake(match.group("id"))
    if check == "card-number":
        return _luhn(value)
    if check == "mnemonic":  # a wallet's recovery phrase: BIP 39's word counts, its words of 3 to 8 letters
        words = value.split()
        return len(words) in (12, 15, 18, 21, 24) and all(3 <= len(word) <= 8 for word in words)
    if check == "name-call" and _accessor(match.group("name")):
        return False
    name = text[match.start("name"):match.end("name")]
    if _not_a_setting(name, match, value, text):
        return False
    if not is_secret_name(name):
        return False
    if check == "name-table":
        return _prose_value(value, expressions=True)
    if check == "name-prose" and group == "bare" and match.group("sep").strip(" \t:="):
        return _prose_value(value)  # after "is": a plain word is prose ("the token is invalid"), not a credential
    if check == "name-machine" and group == "bare":  # "PASSWORD X" with no sign between: X must look machine-made
        return _machine_made(value) and plausible_value(value, expressions=True)
    if check == "name-machine-literal":  # a literal inside code: not a lookup key (os.environ["API_KEY_V2"]) or address
        return _machine_made_bare(value) and " " not in value and "://" not in value
    return plausible_value(value, expressions=group == "bare")


def _not_a_setting(name: str, match: re.Match[str], value: str, text: str) -> bool:
    """A secret-named name whose value, by what stands around it, is no secret it sets: a test report, a shell's
    error message for an unset variable, an ARN's resource, a key compared to a key's name, a task of a namespace,
    a log line's ``auth:``/``token:`` followed by a word."""
    start = match.start("name")
    sep = match.group("sep") if "sep" in match.re.groupindex else ""
    if name == "PASS" and text.endswith("--- ", 0, start):  # go test -v: "--- PASS: TestName (0.00s)"
        return True
    if text.endswith("${", 0, start) and value.startswith("?"):  # ${DB_PASSWORD:?set it in .env}
        return True
    if _ARN_PREFIX.search(text, max(0, start - 160), start):  # arn:aws:secretsmanager:…:secret:prod/db-AbC123
        return True
    if "==" in sep and name.lower().endswith("key") and value.isalpha():  # e.key === 'Escape'
        return True
    if sep == ":" and value.isalpha() and value.islower():  # rails credentials:edit, a task of a namespace
        return True
    last = _WORD_SPLIT.split(name)[-1].lower()
    return last in ("auth", "token") and _plain_word(value)  # a log line's "auth: invalid password attempt"


def _plain_word(value: str) -> bool:
    """A word as prose writes it (``invalid``, ``Economic``, ``API``), not a token of letters alone."""
    return (value.isalpha() and len(value) <= 15 and not _mixed_letters(value)
            and (value.islower() or value.istitle() or (value.isupper() and len(value) <= 5)))


def _accepted(rule: dict[str, Any], match: re.Match[str], text: str) -> tuple[int, int, str] | None:
    """The span a rule's match redacts, or None when its check says the candidate is not a secret.

    Values and names are read from ``text`` at the match's positions: a ``lower`` rule matched
    the lower-cased copy, whose positions are the same.
    """
    group = _secret_group(match)
    start, end = match.span(group)
    if _MASKED.fullmatch(text, start, end) or not _checked(rule.get("check"), match, group, text[start:end], text):
        return None
    extend = rule.get("extend")
    if extend == "indented":
        block_end = _block_end(text, match)
        if block_end is None:
            return None
        end = block_end
        start += len(match.group(group)) - len(match.group(group).lstrip(" \t"))
    elif extend and group == "bare":
        stretch = _EXTEND.match(text, end)
        assert stretch is not None  # the pattern matches the empty string too
        end = stretch.end()
        if extend == "config-line" and _config_line(text, match):
            stop = text.find("\n", end, end + MAX_LINE_VALUE)
            end = len(text) if stop < 0 and len(text) - end <= MAX_LINE_VALUE else (stop if stop >= 0 else end)
            end = start + len(text[start:end].rstrip())
    if text[start:start + 1] in _CLOSING and _CLOSING[text[start]] not in text[start:end]:
        start += 1  # "the admin password (…) and": the bracket is the prose's, not the value's
    if end > start and text[end - 1] in _OPENING and _OPENING[text[end - 1]] not in text[start:end - 1]:
        end -= 1
    return start, end, rule.get("replacement", REDACTED)


def _line_prefix(text: str, position: int) -> str:
    """The text between the start of ``position``'s line and it (at most 200 characters)."""
    line_start = text.rfind("\n", max(position - 200, 0), position) + 1
    if line_start == 0 and position > 200:
        return "x" * 201
    return text[line_start:position]


def _config_line(text: str, match: re.Match[str]) -> bool:
    """A ``name: value`` or ``name = value`` line of a config file, whose value runs to the end of the line."""
    sep = match.group("sep")
    if not (sep.strip(" \t\"'`]") == ":" or (sep[:1] in " \t" and sep.strip() == "=")):
        return False
    prefix = _line_prefix(text, match.start("name")).strip(" \t\"'")
    return prefix in ("", "-", "export", "#")


def _block_end(text: str, match: re.Match[str]) -> int | None:
    """Where a YAML value on the lines after a secret name ends: the lines indented deeper than the name's line.

    None when the name is not a YAML key at the start of its line (``def password():`` is code)
    or the next line is not indented deeper (an empty value).
    """
    prefix = _line_prefix(text, match.start("name"))
    if prefix.strip(" \t-\"'") or len(prefix) > 120:
        return None
    key_indent = len(prefix) - len(prefix.lstrip(" \t"))
    first = match.group("secret")
    indent = len(first) - len(first.lstrip(" \t"))
    if indent <= key_indent:
        return None
    child = _YAML_KEY.match(first)
    if child and child.group(1).lower() in rules().schema_keys:  # a schema or a reference, not a value
        return None
    end = match.end("secret")
    lines = 0
    while lines < MAX_BLOCK_LINES and end < len(text) and end - match.start("secret") < MAX_BLOCK_CHARS:
        stop = text.find("\n", end + 1)
        line = text[end + 1:stop if stop >= 0 else len(text)]
        body = line.lstrip(" \t")
        if body.strip() and len(line) - len(body) < indent:
            break
        if body.strip():
            end = stop if stop >= 0 else len(text)
        elif stop < 0:
            break
        else:  # a blank line belongs to the block only when an indented line follows it
            following = text[stop + 1:text.find("\n", stop + 1) if text.find("\n", stop + 1) >= 0 else len(text)]
            if len(following) - len(following.lstrip(" \t")) < indent or not following.strip():
                break
            end = stop
        lines += 1
    value_start = match.start("secret")
    block = text[value_start:end].rstrip("\r")
    if all(_names_a_secret(line.strip()) for line in block.splitlines() if line.strip()):
        return None  # docker compose's "secrets:\n  - db_password": the names of secrets, not their values
    return value_start + len(block)


def _names_a_secret(line: str) -> bool:
    """A line of a YAML block that names a secret rather than holds it: a name as a list item (``- db_password``), a
    name as a key with nothing after it (``db_password:``), or a key that says where it is (``file: ./secrets/x``)."""
    if _NAME_LINE.fullmatch(line):
        return True
    key = _YAML_KEY.match(line)
    return key is not None and key.group(1).lower() in rules().schema_keys


def _keyword_starts(lower: str, keywords: list[str]) -> list[tuple[int, int]]:
    """(start, end) of every occurrence of ``keywords`` in ``lower``, in order, one per start (the shortest)."""
    found: dict[int, int] = {}
    for keyword in keywords:
        position = lower.find(keyword)
        while position >= 0:
            end = position + len(keyword)
            found[position] = min(found.get(position, end), end)
            position = lower.find(keyword, position + 1)
    return sorted(found.items())


def _name_starts(text: str, words: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(start of the name, end of the secret word) around every occurrence of a secret word, in order.

    ``words`` are where the secret words occur (:func:`_keyword_starts`). The name starts after the last
    character before the word that cannot be part of a name, looking back at most :data:`_MAX_NAME_BACK`
    characters; an occurrence inside a longer run of name characters cannot be a name the rules read, and
    one whose name starts where an earlier one's does is the same candidate. ``str.find`` and
    ``str.rstrip`` do the work, so a text made of secret words costs a bounded amount per occurrence.
    """
    starts: list[tuple[int, int]] = []
    last = -1
    for anchor_start, anchor_end in words:
        floor = max(anchor_start - _MAX_NAME_BACK, 0)
        window = text[floor:anchor_start]
        start = anchor_start - (len(window) - len(window.rstrip(_NAME_CHARS)))
        if start == floor and floor > 0 and text[floor - 1] in _NAME_CHARS or start == last:
            continue
        starts.append((start, anchor_end))
        last = start
    return starts


def _rule_spans(rule: dict[str, Any], text: str, lower: str,
                names: list[tuple[int, int]] | None) -> list[tuple[int, int, str]]:
    """Where one rule finds secrets in ``text``: (start, end, replacement).

    A named rule is tried only at the names around the secret words (:func:`_name_starts`), an
    anchored one only where its anchor occurs (:func:`_anchor_starts`), not at every position;
    others search the text. Either way a rejected candidate moves the scan
    forward, so every position is read a bounded number of times.
    """
    if names is not None and not names:
        return []  # no candidate: not even worth compiling the pattern (a hook process compiles each once)
    pattern = rules().pattern(rule["regex"])
    if "before" in rule and names is not None:
        return _spans_before(rule, pattern, text, names)
    subject = lower if rule.get("lower") else text
    spans: list[tuple[int, int, str]] = []
    if names is not None:
        resume = 0
        for start, anchor_end in names:
            if start < resume:
                continue
            match = pattern.match(subject, start)
            if match is None or match.end("name" if "name" in pattern.groupindex else 0) < anchor_end:
                continue
            span = _accepted(rule, match, text)
            if span is not None:
                spans.append(span)
                resume = span[1]
        return spans
    position = 0
    while position <= len(text):
        match = pattern.search(subject, position)
        if match is None:
            break
        span = _accepted(rule, match, text)
        if span is None:
            position = match.start() + 1
            continue
        spans.append(span)
        position = max(span[1], match.end(), match.start() + 1)
    return spans


def _spans_before(rule: dict[str, Any], pattern: re.Pattern[str], text: str,
                  words: list[tuple[int, int]]) -> list[tuple[int, int, str]]:
    """A rule read backwards: its value is one of the ``rule["before"]`` words (runs of non-space) before a
    keyword of ``words`` that starts a word, in the keyword's sentence ("… is what the new token looks like",
    "… es la nueva contraseña"). Each word is tried whole, less the punctuation around it, with
    ``pattern.fullmatch``; at most :data:`MAX_BEFORE_CHARS` are read back from each keyword. A sentence
    that names a hash before the keyword (commit, checksum, sha256) is not read: its hexadecimal is that.
    """
    spans: list[tuple[int, int, str]] = []
    scanned = 0  # the words before an earlier keyword were read for it: each is read once (keywords in a row)
    for start, keyword_end in words:
        if start and (text[start - 1].isalnum() or text[start - 1] in "_/\\.-"):
            continue  # inside a word, a name or a path: "apikey", "my_token", "src/token.py", "ssh-key"
        if text[keyword_end:keyword_end + 3].isalpha() or _NAME_GOES_ON.match(text, keyword_end):
            continue  # a longer word or a name: "keyboard", "token.py", "token_store" (not "tokens": two letters)
        if _PUBLIC.search(text, max(0, start - 8), start):
            continue  # "ssh-ed25519 AAAAC3… public key": a public key is no secret
        floor, scanned = max(0, start - MAX_BEFORE_CHARS, scanned), start
        for stop in _SENTENCE_ENDS:
            found = text.rfind(stop, floor, start)
            floor = max(floor, found + len(stop)) if found >= 0 else floor
        if _HASH_WORD.search(text, floor, start):
            continue  # "… is the commit that rotated the token": a hash, named in the sentence
        for word in list(_NON_SPACE.finditer(text, floor, start))[-rule["before"]:]:
            head, tail = word.start(), word.end()
            while head < tail and text[head] in _AROUND_WORD:
                head += 1
            while tail > head and text[tail - 1] in _AROUND_WORD:
                tail -= 1
            match = pattern.fullmatch(text, head, tail)
            span = _accepted(rule, match, text) if match else None
            if span is not None:
                spans.append(span)
    return spans


def _block_spans(block: dict[str, Any], text: str) -> list[tuple[int, int, str]]:
    """Whole blocks from a begin marker to its end marker (or to the end of the text)."""
    table = rules()
    begin, end_marker = table.pattern(block["begin"]), table.pattern(block["end"])
    spans: list[tuple[int, int, str]] = []
    position = 0
    while True:
        start = begin.search(text, position)
        if start is None:
            return spans
        end = end_marker.search(text, start.end())
        stop = end.end() if end else len(text)
        spans.append((start.start(), stop, block["replacement"]))
        if end is None:
            return spans
        position = stop


def _lowered(text: str) -> str:
    """``text`` lower-cased position for position (a few characters lower-case to two, such as İ)."""
    lower = text.lower()
    if len(lower) != len(text):
        lower = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    return lower


def _scan(text: str) -> list[tuple[int, int, str]]:
    """Every rule's spans in ``text`` as it stands (overlapping, unsorted)."""
    table = rules()
    lower = _lowered(text)
    present = _present(table, lower)
    spans: list[tuple[int, int, str]] = []
    for block in table.blocks:
        if any(k in lower for k in block["keywords"]):
            spans.extend(_block_spans(block, text))
    # Where the secret words of the names table occur: the named rules and tables start from there.
    words = _keyword_starts(lower, [word for word in table.anchors if word in present])
    starts: dict[Any, list[tuple[int, int]]] = {}
    for rule, gate in zip(table.rules, table.gates):
        if (gate and present.isdisjoint(gate)) or ("requires" in rule and not any(
                needed in lower for needed in rule["requires"])):
            continue
        candidates = None
        if rule.get("anchors") == "names":
            candidates = starts.get("names")
            if candidates is None:
                candidates = starts["names"] = _name_starts(text, words)
        elif rule.get("anchors") == "keywords":
            candidates = _keyword_starts(lower, [keyword for keyword in gate if keyword in present])
        elif "anchor" in rule:
            anchor = rule["anchor"]
            key = (anchor["regex"], bool(rule.get("lower")))
            candidates = starts.get(key)
            if candidates is None:
                candidates = starts[key] = _anchor_starts(lower if rule.get("lower") else text, anchor)
        spans.extend(_rule_spans(rule, text, lower, candidates))
    if "secret" in lower and "kind" in lower and "data" in lower:
        spans.extend(_kubernetes_spans(text))
    if words and ("," in text or ";" in text or "\t" in text or "|" in text or "insert" in lower):
        from .secret_tables import table_spans

        spans.extend((start, end, REDACTED) for start, end in table_spans(
            text, lower, [start for start, _ in words], is_secret_name, _prose_value))
    spans.extend(_base64_spans(text))
    if "-" in text or "_" in text:
        spans.extend(_url_safe_base64_spans(text))
    return spans


def _base64_spans(text: str) -> list[tuple[int, int, str]]:
    """Base64 blobs (a line of ``base64 .env``, a Kubernetes value) whose decoded text holds a secret, whole.

    A blob wrapped the way ``base64`` and PEM wrap (full lines of 76 or 64 characters) is read across its
    lines. Each blob is decoded once, at most its first :data:`MAX_BASE64_DECODE` characters.
    """
    spans: list[tuple[int, int, str]] = []
    position = 0
    while True:
        found = _BASE64.search(text, position)
        if found is None:
            return spans
        end = found.end()
        width = end - found.start()
        while width in _BASE64_WRAPS and text.startswith("\n", end) and end - found.start() < MAX_BASE64_DECODE:
            following = _BASE64.match(text, end + 1)
            if following is None or following.end() - following.start() > width:
                break
            end = following.end()
            if following.end() - following.start() < width:
                break
        if _base64_hides_secret(text[found.start():end]):
            spans.append((found.start(), end, REDACTED))
        position = end


def _url_safe_base64_spans(text: str) -> list[tuple[int, int, str]]:
    """URL-safe base64 blobs (with a ``-`` or ``_``: the others are standard base64) whose decoded text holds a
    secret, whole. Identifiers such as ``snake_case_names`` match too and decode to bytes that are not text."""
    return [(found.start(), found.end(), REDACTED) for found in _BASE64_URL.finditer(text)
            if ("-" in found.group() or "_" in found.group())
            and _base64_hides_secret(found.group().replace("-", "+").replace("_", "/"))]


def _base64_hides_secret(blob: str) -> bool:
    """Whether ``blob`` decodes to text (UTF-8, printable) in which a rule finds a secret."""
    import binascii

    body = blob.replace("\n", "")[:MAX_BASE64_DECODE]
    body = body[:len(body) - len(body) % 4]
    try:
        data = binascii.a2b_base64(body)
    except (binascii.Error, ValueError):
        return False
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(data) - 3 or exc.reason != "unexpected end of data":
            return False
        decoded = data[:exc.start].decode("utf-8")  # a character cut where the decoding stopped
    if not decoded.replace("\n", "").replace("\t", "").replace("\r", "").isprintable():
        return False
    return bool(_scan(decoded))


def _kubernetes_spans(text: str) -> list[tuple[int, int, str]]:
    """The values under ``data:`` and ``stringData:`` of a Kubernetes ``kind: Secret`` (YAML or JSON).

    A value there is the secret itself (base64 of it under ``data``) whatever its key is called, so each is
    redacted and the keys are kept. In YAML only the documents (between ``---`` lines) that say
    ``kind: Secret`` count, ``kubectl get secrets -o yaml``'s list included; in JSON, any text that does.
    """
    spans: list[tuple[int, int, str]] = []
    kinds = [found.start() for found in _K8S_KIND.finditer(text)]
    documents = [-1, *(found.start() for found in _DOCUMENT_START.finditer(text)), len(text)]
    for data in _K8S_DATA.finditer(text) if kinds else ():
        document = bisect_right(documents, data.start())
        first_kind = bisect_right(kinds, documents[document - 1])
        if first_kind == len(kinds) or kinds[first_kind] > documents[document]:
            continue  # no kind: Secret in this data's document
        indent = len(data.group(1))
        position, lines = data.end() + 1, 0
        while position < len(text) and lines < MAX_BLOCK_LINES:
            lines += 1
            line_end = text.find("\n", position)
            line_end = len(text) if line_end < 0 else line_end
            line = text[position:line_end]
            depth = len(line) - len(line.lstrip(" \t"))
            if line.strip() and depth <= indent:
                break
            entry = _YAML_ENTRY.match(text, position, line_end)
            if entry is not None:
                value_start, value_end = entry.span(2)
                if entry.group(2)[:1] in "|>":  # a block scalar: the lines indented deeper than its key
                    value_start, value_end = line_end, line_end
                    while value_end < len(text) and lines < MAX_BLOCK_LINES:
                        following = text.find("\n", value_end + 1)
                        following = len(text) if following < 0 else following
                        body = text[value_end + 1:following]
                        if body.strip() and len(body) - len(body.lstrip(" \t")) <= len(entry.group(1)):
                            break
                        value_end, lines = following, lines + 1
                    block = text[line_end:value_end]
                    value_start = line_end + len(block) - len(block.lstrip(" \t\r\n"))
                value = text[value_start:value_end].rstrip()
                if value and not _PLACEHOLDER.fullmatch(value.strip("\"'")):  # a Helm chart's {{ .Values.x }}
                    spans.append((value_start, value_start + len(value), REDACTED))
                position = max(value_end, line_end) + 1
            else:
                position = line_end + 1
    if _K8S_JSON_KIND.search(text):
        for data in _K8S_JSON_DATA.finditer(text):
            position = data.end()
            for _ in range(MAX_BLOCK_LINES):
                entry = _JSON_ENTRY.match(text, position)
                if entry is None:
                    break
                if entry.end(1) > entry.start(1):
                    spans.append((entry.start(1), entry.end(1), REDACTED))
                position = entry.end()
                if not entry.group(2):
                    break
    return spans


def _anchor_starts(text: str, anchor: dict[str, Any]) -> list[tuple[int, int]]:
    """(start, end of the anchor) for every occurrence of a rule's anchor regex, the start found by going back
    over the anchor's ``back`` characters (at most ``max_back``)."""
    back, max_back = anchor["back"], anchor["max_back"]
    found = []
    for hit in rules().pattern(anchor["regex"]).finditer(text):
        floor = max(hit.start() - max_back, 0)
        window = text[floor:hit.start()]
        found.append((hit.start() - (len(window) - len(window.rstrip(back))), hit.end()))
    return found


class _View:
    """A text as the rules read it, and where each change to the original went: the characters at
    ``source[i]`` (``old[i]`` of them) of the original became ``new[i]`` characters at ``at[i]`` of ``text``."""

    __slots__ = ("text", "at", "source", "old", "new")

    def __init__(self) -> None:
        self.text = ""
        self.at: list[int] = []
        self.source: list[int] = []
        self.old: list[int] = []
        self.new: list[int] = []

    def start_of(self, position: int) -> int:
        """The original position of the character at ``position`` (a changed run maps to its start)."""
        index = bisect_right(self.at, position) - 1
        if index < 0:
            return position
        if position < self.at[index] + self.new[index]:
            return self.source[index]
        return self.source[index] + self.old[index] + position - self.at[index] - self.new[index]

    def end_of(self, end: int) -> int:
        """The original end of a span ending (exclusive) at ``end``: a changed run it cuts goes with it whole."""
        index = bisect_right(self.at, end - 1) - 1
        if index >= 0 and end - 1 < self.at[index] + self.new[index]:
            return self.source[index] + self.old[index]
        return self.start_of(end)


def _view(text: str, changes: Iterable[tuple[int, int, str]]) -> _View | None:
    """``text`` with each (start, end, replacement) of ``changes`` (in order, not overlapping) made, or None
    when there is none."""
    parts: list[str] = []
    view = _View()
    position = shift = 0
    for begin, finish, replacement in changes:
        parts.append(text[position:begin])
        parts.append(replacement)
        view.at.append(begin + shift)
        view.source.append(begin)
        view.old.append(finish - begin)
        view.new.append(len(replacement))
        shift += len(replacement) - (finish - begin)
        position = finish
    if not view.at:
        return None
    parts.append(text[position:])
    view.text = "".join(parts)
    return view


def _decode(text: str) -> _View | None:
    """``text`` with one layer of escapes undone (each escape is one character), or None when there is
    nothing to undo."""
    if "\\" not in text and "%" not in text and "&" not in text:
        return None
    return _view(text, ((escape.start(), escape.end(), _unescaped(escape.group()))
                        for escape in _ESCAPE.finditer(text)))


def _unescaped(token: str) -> str:
    """The character an escape (``%41``, ``&amp;``, ``&#65;``, ``\\u0041``, ``\\n``) stands for, or what a
    shell line continuation (a backslash ending a line) leaves: nothing, or one space before indentation."""
    if token[0] == "%":
        return chr(int(token[1:], 16))
    if token[0] == "&":
        name = token[1:-1]
        number = int(name[2:], 16) if name[:2] in ("#x", "#X") else int(name[1:]) if name[0] == "#" else None
        return _ENTITIES[name] if number is None else chr(min(number, 0x10FFFF))
    if token[1] in "ux":
        return chr(int(token[2:], 16))
    if token[1] in "\r\n":  # a shell line continuation joins its lines; indentation after it still separates words
        return " " if token[-1] in " \t" else ""
    return _SIMPLE_ESCAPES.get(token[1], token[1])


def _normalized(text: str) -> _View | None:
    """``text`` as the rules read it when it is not plain ASCII: each character in its NFKC form
    (full-width ``ｐａｓｓｗｏｒｄ＝`` is ``password=``, full-width digits are digits) and every
    :data:`INVISIBLE` character dropped. None when nothing changes: a text already in NFKC with
    nothing invisible (Russian, Chinese, accented prose) costs two C-level checks.
    """
    import unicodedata

    if unicodedata.is_normalized("NFKC", text) and not any(char in text for char in INVISIBLE):
        return None

    def changes() -> Iterator[tuple[int, int, str]]:
        for run in _NOT_ASCII.finditer(text):
            for index in range(run.start(), run.end()):
                char = text[index]
                folded = "" if char in INVISIBLE else unicodedata.normalize("NFKC", char)
                if folded != char:
                    yield index, index + 1, folded

    return _view(text, changes())


def _scan_views(text: str) -> list[tuple[int, int, str]]:
    """:func:`_scan` of ``text``, and when it is not plain ASCII (the common case skips this at the cost of
    ``str.isascii``) of its normalised view (:func:`_normalized`), each hit mapped back to the span of
    ``text`` it came from: the invisible characters inside a secret go with it, nothing else changes."""
    spans = _scan(text)
    if text.isascii():
        return spans
    view = _normalized(text)
    if view is None:
        return spans
    for start, end, replacement in _scan(view.text):
        if end > start:
            spans.append((view.start_of(start), view.end_of(end), replacement))
    return spans


def find_secrets(text: str) -> list[tuple[int, int, str]]:
    """Non-overlapping (start, end, replacement) spans of every secret in ``text``, in order.

    The text is scanned as it stands and again after each layer of escapes is undone, each layer also
    in its normalised form when it is not plain ASCII (:func:`_scan_views`); a hit in a decoded layer
    is mapped back to the characters of ``text`` it came from.
    """
    spans = _scan_views(text)
    layers: list[_View] = []
    current = text
    for _ in range(MAX_DECODE_ROUNDS):
        decoded = _decode(current)
        if decoded is None:
            break
        current = decoded.text
        layers.append(decoded)
        for start, end, replacement in _scan_views(current):
            for layer in reversed(layers):
                start, end = layer.start_of(start), layer.end_of(end)
            spans.append((start, end, replacement))
    spans = [(start, _continued(text, start, end) if replacement == REDACTED else end, replacement)
             for start, end, replacement in spans]
    spans.sort()
    merged: list[tuple[int, int, str]] = []
    for start, end, replacement in spans:
        if merged and start < merged[-1][1]:
            last = merged[-1]
            if end > last[1]:
                merged[-1] = (last[0], end, last[2])
            continue
        merged.append((start, end, replacement))
    return merged


def _continued(text: str, start: int, end: int) -> int:
    """Where a redacted token really ends when the text goes on with the rest of it on the next lines: a terminal
    wrapped it (the next line starts with the rest), a program folded it (the rest is an indented line of its own)
    or a program split it into string literals that the language joins (``"sk_live_…"`` then ``"…"`` on the next
    line). The rest must read as random (:func:`_random_token`; 16 characters or more need no digit): a word, a
    name or ``KEY=value`` does not."""
    if end - start < 8 or any(c.isspace() for c in text[start:end]):
        return end
    for _ in range(MAX_CONTINUED_LINES):
        found = _CONTINUATION.match(text, end)
        if found is None or bool(found.group("open")) != bool(found.group("close")):
            return end
        if found.group("close") and found.group("close") != text[end:end + 1]:
            return end  # a literal continues a quoted value only: "…"\n"…"
        line_end = text.find("\n", found.end())
        alone = not text[found.end():len(text) if line_end < 0 else line_end].strip(" \t\r,;)")
        if not found.group("close") and found.group("indent") and not alone:
            return end  # an indented line continues a folded value only when the rest is the whole line
        body = _alphanumerics(found.group("rest"))
        if not _random_token(body, needs_digit=len(body) < 16):  # a long rest of random letters may hold no digit
            return end
        end = found.end("rest")
    return end


def redact_secrets(text: str) -> str:
    """Replace every secret value with ``[REDACTED]``, keeping the names and text around it."""
    spans = find_secrets(text)
    if not spans:
        return text
    parts: list[str] = []
    position = 0
    for start, end, replacement in spans:
        parts.append(text[position:start])
        parts.append(replacement)
        position = end
    parts.append(text[position:])
    return "".join(parts)


def storable(text: str) -> str:
    """Text SQLite can store as UTF-8: a lone surrogate becomes its escape (``\\ud800``) instead of an error."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def redact_value(value: Any) -> Any:
    """A JSON-like value with every string in it redacted (keys kept), before it is serialized.

    Serializing first would turn line breaks into ``\\n`` and glue each line's first word to
    an ``n``, hiding it from word-boundary rules; callers redact the serialized text again for
    ``"password": "…"`` pairs, which need the key.
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: redact_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(item) for item in value]
    return value


def redact_fields(value: Any) -> Any:
    """A stored JSON value (a memory's metadata, tags or files) with every string in it redacted, keys too.

    A string under a key whose name ends in a secret word (``{"password": "…"}``) is replaced
    whole unless it is a placeholder (``$TOKEN``, ``<key>``, ``***``), as the name rules do in
    text. Cheap for the common small dict the capture hook passes: its keys and strings are
    scanned once, joined by line breaks (no rule reads across one differently from a string's
    end), and only when that scan changes something is each string redacted on its own.
    Returns ``value`` itself when nothing changes.
    """
    strings: list[str] = []
    named = _gather(value, strings, None)
    joined = "\n".join(strings)
    if not named and redact(joined) == joined:
        return value
    return _redact_tree(value, None)


def _gather(value: Any, strings: list[str], key: Any) -> bool:
    """Append every string of ``value`` (dict keys too) to ``strings``; True if one sits under a secret name."""
    if isinstance(value, str):
        strings.append(value)
        return isinstance(key, str) and is_secret_name(key)
    named = False
    if isinstance(value, dict):
        for name, item in value.items():
            if isinstance(name, str):
                strings.append(name)
            named = _gather(item, strings, name) or named
    elif isinstance(value, (list, tuple)):
        for item in value:
            named = _gather(item, strings, key) or named
    return named


def _redact_tree(value: Any, key: Any) -> Any:
    if isinstance(value, str):
        if isinstance(key, str) and is_secret_name(key) and plausible_value(value):
            return REDACTED  # a value, not code: ``a.b.c`` under "token" is a token (Discord's look so)
        return redact(value)
    if isinstance(value, dict):
        return {(redact(name) if isinstance(name, str) else name): _redact_tree(item, name)
                for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact_tree(item, key) for item in value]
    return value


def redact(text: str) -> str:
    """Everything applied to text before it is stored: private spans, then secrets, then storable UTF-8."""
    if not isinstance(text, str) or not text:
        return text
    return storable(redact_secrets(strip_private(text)))
