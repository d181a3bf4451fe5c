"""Issue 19, redaction: every secret form found reaching the database, through the real hooks, then a byte search.

Each form of :data:`testing.secret_corpus.ISSUE19` and of :func:`_more_forms` (env assignments with glued
and ``_KEY`` names, headers, cookies, ``.pgpass``/``.netrc`` lines, ``$``/``%``-led passwords,
dotted passphrases, YAML next-line and block values, escaped JSON, percent-encoded names,
kubeconfig key data, PHP ``define``, call arguments, XML, name/value pairs, URLs, tool flags …)
is sent through the real capture hook as Bash output, a Bash command, a failing Bash call's
error, Write content, Edit content and Read output, and as a prompt and the last message of a
turn; then the session's Stop and SessionEnd hooks run (summary, promotion). Then every file of
the data directory (database, ``-wal``, ``-shm``, logs, anything else) is searched byte for byte
for each secret, for its percent-encoded and JSON-escaped forms and for its middle (a secret
whose first character was redacted alone is still a leak).

Unit tests: every secret word of the names table is redacted on its own (the gate), values that
must survive do, ``<private>`` handling, and megabyte adversarial inputs finish (in a
subprocess with a generous timeout, not a time assertion).
"""

from __future__ import annotations

import base64
import json
import random
import string
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest

from ccmemory import redaction
from testing.hooks import (
    assert_quiet_success, common, HOOK_PYTHON, memories_of, run_hook, tool_call, write_config, write_transcript,
)
from testing.secret_corpus import (chunks, CODE, CODE_LOOKALIKES, ISSUE19, MORE_FORMS_LOOKALIKES, OTHER_LANGUAGE_LOOKALIKES,
                                   PROSE, REDTEAM, SPACE_VALUE_LOOKALIKES, TABLE_LOOKALIKES, TABLES)

_RNG = random.Random(1919)
SRC = Path(__file__).resolve().parents[2] / "src"


def _secret() -> str:
    return "".join([_RNG.choice(string.ascii_uppercase), *(_RNG.choice(string.ascii_lowercase) for _ in range(5)),
                    *(_RNG.choice(string.digits) for _ in range(3)),
                    *(_RNG.choice(string.ascii_letters + string.digits) for _ in range(7))])


_MORE = {
    "env-assignment": ["export DB_PASSWORD='{s}'", "set REDIS_PASSWORD={s}", "$env:API_TOKEN = '{s}'",
                       "setx GITHUB_TOKEN {s}", "set -gx NPM_TOKEN {s}", "ENV DB_PASSWORD {s}", "AWS_SESSION_TOKEN={s}",
                       "DB_PASSWORD_PROD={s}", "SMTP_PASS={s}"],
    "cli-flag": ["mysql --password={s} app", "gpg --passphrase {s} -d f.gpg", "app --api-key \"{s}\"",
                 "mysql -p'{s}' app", "sshpass -p{s} ssh host", "oc login -u dev -p {s} https://api.cluster",
                 "htpasswd -b .htpasswd admin {s}", "echo 'root:{s}' | chpasswd", "7z x backup.7z -p{s}",
                 "zip -P {s} out.zip f", "openssl enc -aes-256-cbc -pass pass:{s}", "ldapsearch -x -w {s} -b dc=x",
                 "smbclient //fs/share -U 'admin%{s}'", "npm config set //registry.npmjs.org/:_authToken {s}",
                 "New-Object PSCredential('u', (ConvertTo-SecureString '{s}' -AsPlainText -Force))",
                 "convertto-securestring -String \"{s}\" -AsPlainText -Force"],
    "structured-key": ['{{"client_secret": "{s}"}}', "api_key = \"{s}\"", "[db]\npassword = {s}",
                       "spring.datasource.password={s}", "password: str = \"{s}\"", "<password>{s}</password>",
                       '<add key="ApiKey" value="{s}" />', '{{"name": "DB_PASSWORD", "value": "{s}"}}',
                       "- name: API_TOKEN\n  value: {s}", "stringData:\n  password: {s}",
                       "password = correct horse {s}", "privateKey: {s}",
                       'variable "db_password" {{\n  type      = string\n  sensitive = true\n  default   = "{s}"\n}}'],
    "http-header": ["Authorization: Bearer {s}", "Proxy-Authorization: Basic {s}", "X-Api-Key: {s}",
                    "x-auth-token: {s}", "Private-Token: {s}", "Ocp-Apim-Subscription-Key: {s}",
                    "X-Hub-Signature-256: sha256={s}"],
    "url": ["postgres://app:{s}@db:5432/prod", "mongodb+srv://u:{s}@cluster0.example.net/db", "redis://:{s}@cache:6379",
            "https://me@example.com:{s}@git.example.com/r.git", "jdbc:mysql://h/db?user=x&password={s}",
            "Server=x;User Id=sa;Password={s};", "https://api.example.com/v1?access_token={s}&page=2"],
    "prose": ["the password is {s}", "API key: {s}", "Password for admin: {s}"],
    "decoded": ["p&#97;ssword={s}", "\\u0070assword: {s}", '{{\\"data\\": \\"{{\\\\\\"token\\\\\\": \\\\\\"{s}\\\\\\"}}\\"}}'],
    # issue 25: names disguised by full-width forms and invisible characters, bare ?key= in URLs
    "unicode": ["ｐａｓｓｗｏｒｄ＝{s}", "DB_PASS\u200bWORD={s}", "pass\u00adword: {s}", 'api\u2060key = "{s}"',
                "ＡＰＩ＿ＫＥＹ＝{s}", "to\u200cken\ufeff: {s}", "export SECRET\u200d_KEY={s}"],
    "url-query": ["https://maps.example.com/api/geocode?address=x&key={s}", "curl 'https://h.example/v1?key={s}&page=2'",
                  "https://bucket.s3.amazonaws.com/o?X-Amz-Signature={s}&X-Amz-Expires=60",
                  "https://login.example.com/token?client_secret={s}&grant_type=x", "https://h.example/f?sig={s}&se=1",
                  "https://h.example/cb#access_token={s}&state=1", "https://h.example/?token={s}",
                  "https://h.example/login?user=bob&password={s}", "https://h.example/?signature={s}"],
}


def _issue25_forms() -> list[tuple[str, str, str]]:
    """Secrets hidden in base64 (an env file, a token, a Kubernetes Secret's values) and tokens split by
    invisible characters or written in full-width forms: the secret is what must not be stored."""
    cases = []
    for template in ("echo {b} | base64 -d > .env", "ENV_FILE_B64={b}", "  env: {b}"):
        secret = _secret()
        blob = base64.b64encode(f"APP=demo\nDB_PASSWORD={secret}\nDEBUG=1\n".encode()).decode()
        cases.append(("base64-env", template.format(b=blob), blob))
    env = f"APP=demo~~??>>\nDB_PASSWORD={_secret()}\n".encode()  # "~~??>>" puts "-" and "_" in the URL-safe form
    blob = base64.urlsafe_b64encode(env).decode()
    cases.append(("base64-url-safe", f"ENV_B64={blob}", blob))
    token = "gh" + "p_" + "".join(_RNG.choice(string.ascii_letters + string.digits) for _ in range(36))
    blob = base64.b64encode(token.encode()).decode()
    cases.append(("base64-token", f"GITHUB_AUTH: {blob}", blob))
    wrapped = base64.encodebytes(("LOG=info\n" * 12 + f"STRIPE_SECRET={_secret()}\n").encode()).decode().strip()
    cases.append(("base64-wrapped", f"$ base64 .env\n{wrapped}\n$ done", wrapped.split("\n")[-1]))
    for key in ("config", "tls.key", ".dockerconfigjson"):
        value = base64.b64encode(_secret().encode()).decode()
        cases.append(("kubernetes-secret", f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\ndata:\n"
                                           f"  {key}: {value}\ntype: Opaque", value))
    value = base64.b64encode(_secret().encode()).decode()
    cases.append(("kubernetes-secret", json.dumps({"kind": "Secret", "data": {"config": value}}, indent=2), value))
    token = "".join(_RNG.choice(string.ascii_letters + string.digits) for _ in range(36))
    cases.append(("split-token", f"GH auth: gh\u200bp_{token[:10]}\u200b{token[10:]}", token[10:]))
    key = "".join(_RNG.choice(string.ascii_uppercase + "234567") for _ in range(16))
    full_width = "".join(chr(ord(char) + 0xFEE0) for char in "AKIA" + key)
    cases.append(("full-width-token", f"aws key {full_width} found", full_width[4:]))
    return cases


def _more_forms() -> list[tuple[str, str, str]]:
    cases = []
    for fmt, templates in _MORE.items():
        for template in templates:
            secret = _secret()
            cases.append((fmt, template.format(s=secret), secret))
    return cases


FORMS = ISSUE19 + _more_forms() + _issue25_forms() + REDTEAM + CODE + PROSE + TABLES


def _payloads(channel: str, session: str, project: Path, chunk: str, number: int) -> list[dict]:
    path = str(project / f"config{number}.txt")
    ident = f"{channel}-{number}"
    if channel == "bash-output":
        return [tool_call(session, project, "Bash", {"command": f"cat {path}"},
                          {"stdout": chunk, "stderr": "", "interrupted": False}, ident)]
    if channel == "bash-command":
        return [tool_call(session, project, "Bash", {"command": chunk, "description": "Configure"},
                          {"stdout": "done", "stderr": "", "interrupted": False}, ident)]
    if channel == "bash-failure":
        return [tool_call(session, project, "Bash", {"command": chunk}, None, ident, event="PostToolUseFailure",
                          error=f"Exit code 1\n{chunk}")]
    if channel == "write":
        return [tool_call(session, project, "Write", {"file_path": path, "content": chunk}, {"type": "create"}, ident)]
    if channel == "edit":
        return [tool_call(session, project, "Edit", {"file_path": path, "old_string": "placeholder\n",
                                                      "new_string": chunk}, {"filePath": path}, ident)]
    if channel == "read":
        return [tool_call(session, project, "Read", {"file_path": path},
                          {"type": "text", "file": {"filePath": path, "content": chunk, "numLines": 9}}, ident)]
    raise AssertionError(channel)


def _leaks(home: Path, cases: list[tuple[str, str, str]]) -> dict[str, tuple[str, str]]:
    """Secrets (or their encoded forms, or their middles) found in any file under ``home``: secret -> (form, file)."""
    files = {str(p.relative_to(home)): p.read_bytes() for p in home.rglob("*") if p.is_file()}
    assert any(name.startswith("ccmemory.db") for name in files)
    found = {}
    for fmt, _, secret in cases:
        needles = {secret, urllib.parse.quote(secret, safe=""), json.dumps(secret)[1:-1], secret[1:-1]}
        for needle in needles:
            for name, data in files.items():
                if needle.encode() in data:
                    found[secret] = (fmt, name)
    return found


CHANNELS = ["bash-output", "bash-command", "bash-failure", "write", "edit", "read"]


@pytest.mark.parametrize("channel", CHANNELS)
def test_no_form_reaches_any_file_of_the_data_directory(home: Path, project_dir: Path, channel: str) -> None:
    write_config(home, {"capture": {"max_field_chars": 9000, "max_result_chars": 60000}})
    session = f"s-{channel}"
    pieces = chunks([text for _, text, _ in FORMS], 2500)
    for number, chunk in enumerate(pieces):
        for payload in _payloads(channel, session, project_dir, chunk, number):
            assert_quiet_success(run_hook("post_tool_use", payload, home, CCMEMORY_DEBUG="1"))
    if channel != "read":
        assert len(memories_of(home, session)) == len(pieces)
    transcript = project_dir / f"{session}.jsonl"
    write_transcript(transcript, pieces[:3])
    assert_quiet_success(run_hook("stop", common(session, project_dir, "Stop", transcript_path=str(transcript),
                                                 stop_hook_active=False, last_assistant_message=pieces[0]), home))
    assert_quiet_success(run_hook("session_end", common(session, project_dir, "SessionEnd",
                                                        transcript_path=str(transcript), reason="other"), home))
    leaks = _leaks(home, FORMS)
    assert leaks == {}, f"{len(leaks)} of {len(FORMS)} secrets on disk: {sorted(leaks.values())[:10]}"


@pytest.mark.parametrize("fmt,text,secret", FORMS, ids=[f"{f}-{i}" for i, (f, _, _) in enumerate(FORMS)])
def test_each_form_is_redacted_where_it_stands(fmt: str, text: str, secret: str) -> None:
    redacted = redaction.redact(text)
    assert secret not in redacted and secret[1:-1] not in redacted and "[REDACTED" in redacted


def _names_table() -> dict:
    with open(redaction.RULES_PATH, encoding="utf-8") as handle:
        return json.load(handle)["names"]


def _secret_names() -> list[str]:
    names = _names_table()
    found = [f"MY_{word.upper()}" for word in names["words"]] + [f"{word}" for word in names["words"]]
    found += [f"MY_{first}_{last}" for first, last in names["pairs"]]
    found += [f"DB{word.upper()}" for word in names["glued_suffixes"]]
    found += [f"{prefix}Key" for prefix in names["glued_key_prefixes"]]
    found += ["FERNET_KEY", "client-key-data", "MY_PASSWORD_B64", "tokenValue"]
    return found


@pytest.mark.parametrize("name", _secret_names())
def test_every_secret_name_is_redacted_on_its_own(name: str) -> None:
    """No other rule's word in the text: the gate that decides which rules run must include every secret word."""
    value = "Qv7mZ2xRt9Lw"
    for text in (f"{name}={value}", f'"{name}": "{value}"', f"--{name} {value}", f"{name}:\n  {value}\n"):
        assert value not in redaction.redact(text), text


@pytest.mark.parametrize("text", [
    "the password field is required", "Password reset flow sends an email", "echo $HOME", "cd $HOME/src",
    "password = getpass()", "password = getpass.getpass('Password: ')", 'os.environ["DB_PASSWORD"]',
    "db_password = os.environ['DB_PASSWORD']", "token = request.headers.get('Authorization')",
    "if not password:\n    raise ValueError('password is required')", "def check_password(password):\n    return True",
    "sort_key = lambda x: x[0]", "primary_key = True", "PUBLIC_KEY_PATH=/etc/ssl/pub.pem", "max_tokens=4096",
    "curl --key client.key --cert client.crt https://x", "--ssh-key ~/.ssh/id_rsa", "src/app.py:12:5: E501 line too long",
    "12:30:45 INFO started", "git log --format='%H %s'", "password: ${{ secrets.DB_PASSWORD }}", "password: <your-password>",
    "password: ********", "token: ${GITHUB_TOKEN}", "API_KEY=%API_KEY%", "export PGPASSWORD=$(cat ~/.pgpass)",
    "token: string;", "password: Optional[str] = None", "password_hash = bcrypt.hashpw(pw, salt)",
    "salt = bcrypt.gensalt()", "signature = inspect.signature(fn)", "cookie = request.cookies.get('sid')",
    "the token is invalid", "the token is expired.", "password was changed", "dsn = settings.SENTRY_DSN",
    "self.password = password", "key = event.key", "bypass = true", "password:\n  type: string\n  minLength: 8",
    "password:\n  valueFrom:\n    secretKeyRef:\n      name: db", "DB_PASSWORD=$DB_PASSWORD", "password=${DB_PASSWORD}",
    # issue 25: ordinary query parameters, prose, other scripts, harmless base64, a ConfigMap's data
    "https://example.com/list?page=2&sort=name", "https://example.com/?key=value", "key=name, as the docs say", "?key=primary_key",
    "Привет, ёжик: это не секрет", "東京：はい、ＯＫ", "ｆｕｌｌ　ｗｉｄｔｈ ｔｅｘｔ ＝ ｆｉｎｅ", "a\u200bb\u00adc",
    "echo aGVsbG8gd29ybGQsIHRoaXMgaXMgaGFybWxlc3M= | base64 -d", "commit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a",
    "src/ccmemory/memories/things/and/more/Components", "kind: ConfigMap\ndata:\n  mode: production\n  replicas: '3'",
    # the red-team pass: digests, lock-file integrity, identifiers, accessors, YAML references and prose stay
    '"integrity": "sha512-AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw=="',
    '<script integrity="sha384-oqVuAfXRKap7fdgcCY5uykM6R9GqQ8Kuxy9rx7HNQlGYl1kPzQho1wx4JwY8wC"></script>',
    "github.com/stretchr/testify v1.8.4 h1:CcVxjf3Q8PM0mHUKJCdn+eZZtm5yQwehR5yeSVQQcUk=",
    "image: ghcr.io/acme/app@sha256:" + "3f" * 32, "STRIPE_PUBLISHABLE_KEY=pk_live_51HqLyjWDarjtT1zdp7dcXyz",
    "test_HttpClientRetriesOn503AndSucceedsAfterBackoff2x", "my_variable_ThisIsALongCamelCaseName2WithNumbers",
    'getPassword("db.password")', "readSecret('prod/api')", "password = getpass.getpass('Password: ')",
    "Basic authentication is disabled", "The Authorization header is required", "sqlplus / as sysdba",
    "the user identified by the token", "https://host.example.com:8443/path/@scope/pkg", "setenv LANG en_US.UTF-8",
    "password: &default_password\n  type: string", "oauth_client = OAuth2Session(client_id)", "file_pat = '*.py'",
    "net use Z: \\\\fs01\\share /persistent:yes",
    *OTHER_LANGUAGE_LOOKALIKES,
    *TABLE_LOOKALIKES,
    *CODE_LOOKALIKES,
    *SPACE_VALUE_LOOKALIKES,
    *MORE_FORMS_LOOKALIKES,
])
def test_non_secrets_survive(text: str) -> None:
    assert redaction.redact(text) == text


@pytest.mark.parametrize("text,expected", [
    ('{\\"db_password\\": \\"Qv7mZ2xRt9Lw\\", \\"user\\": \\"bob\\"}',
     '{\\"db_password\\": \\"[REDACTED]\\", \\"user\\": \\"bob\\"}'),
    ("db%5Fpassword=Qv7mZ2xRt9Lw&user=bob", "db%5Fpassword=[REDACTED]&user=bob"),
    # a table whose header names the column: only the cell goes, its quotes and the other columns stay
    ("user,password,role\nbob,Qv7mZ2xRt9Lw,admin\namy,\"Zx8#kq2Lw\",dev\n",
     "user,password,role\nbob,[REDACTED],admin\namy,\"[REDACTED]\",dev\n"),
    ("| user | token |\n|---|---|\n| ci | Qv7mZ2xRt9Lw |\n\nNext paragraph, with a comma",
     "| user | token |\n|---|---|\n| ci | [REDACTED] |\n\nNext paragraph, with a comma"),
    ("| Setting | Value |\n|---|---|\n| DB password | Qv7mZ2xRt9Lw |\n| host | db.internal |\n",
     "| Setting | Value |\n|---|---|\n| DB password | [REDACTED] |\n| host | db.internal |\n"),
    ("INSERT INTO users (name, password) VALUES ('bob', 'Qv7mZ2xRt9Lw'), ('it''s', 'a''b9Zx8#kq');",
     "INSERT INTO users (name, password) VALUES ('bob', '[REDACTED]'), ('it''s', '[REDACTED]');"),
    ("password:\n  Qv7mZ2xRt9Lw\nuser: bob", "password:\n  [REDACTED]\nuser: bob"),
    ("token: |\n  Qv7mZ2xRt9Lw\n  second line\n\nnext: 1", "token: |\n  [REDACTED]\n\nnext: 1"),
    ("Cookie: theme=dark; sid=Qv7mZ2xRt9Lw; lang=en", "Cookie: [REDACTED]"),
    ("db.internal:5432:app:appuser:Qv7mZ2xRt9Lw", "db.internal:5432:app:appuser:[REDACTED]"),
    ("password: correct horse battery staple", "password: [REDACTED]"),
    ("PGPASSWORD=$ecr3t!Qv7 psql", "PGPASSWORD=[REDACTED] psql"),
    # issue 25: the normalised view finds it, the original's span is replaced, nothing else changes
    ("Résumé ｆｕｌｌ ﬁle — naïve\nｐａｓｓｗｏｒｄ＝hunter2xyz99 ok", "Résumé ｆｕｌｌ ﬁle — naïve\nｐａｓｓｗｏｒｄ＝[REDACTED] ok"),
    ("tok\u200ben\u00ad=Qv7m\u200bZ2xRt9Lw next \u200b", "tok\u200ben\u00ad=[REDACTED] next \u200b"),
    ("ＡＫＩＡ\u200bＩＯＳＦＯＤＮＮ７ＱＶ７ＭＺ２Ｘ key", "[REDACTED] key"),
    ("GET /v1/geo?key=Qv7mZ2xRt9Lw&page=2 200", "GET /v1/geo?key=[REDACTED]&page=2 200"),
    ("kind: Secret\ndata:\n  username: YWRtaW4=\n  ca.crt: |\n    Q2VydA==\n    QQ==\nstringData:\n  note: plain words\n"
     "type: Opaque", "kind: Secret\ndata:\n  username: [REDACTED]\n  ca.crt: |\n    [REDACTED]\nstringData:\n"
     "  note: [REDACTED]\ntype: Opaque"),
    ('{"data": {"a": "YWRtaW4=", "b": "Qw=="}, "kind": "Secret"}', '{"data": {"a": "[REDACTED]", "b": "[REDACTED]"}, '
     '"kind": "Secret"}'),
    ("printf %s UEdQQVNTV09SRD1RdjdtWjJ4UnQ5THc= | base64 -d", "printf %s [REDACTED] | base64 -d"),
])
def test_redacted_where_it_stands_and_nothing_more(text: str, expected: str) -> None:
    assert redaction.redact(text) == expected


def test_private_span_is_found_after_a_character_that_lower_cases_longer() -> None:
    text = "İİİ before <PRIVATE>the launch codes</Private> after"
    assert redaction.redact(text) == "İİİ before  after"


def test_an_unclosed_private_tag_leaves_a_visible_trace() -> None:
    text = "grep -rn '<private>' docs/ | head"
    assert redaction.redact(text) == "grep -rn '[private: 23 characters hidden, no closing tag]"


def test_a_literal_private_tag_in_a_command_is_visible_in_the_observation(home: Path, project_dir: Path) -> None:
    payload = tool_call("s-tag", project_dir, "Bash", {"command": "grep -rn '<private>' docs/"},
                        {"stdout": "docs/a.md:3: use <private> to hide text", "stderr": "", "interrupted": False},
                        "t-tag")
    assert_quiet_success(run_hook("post_tool_use", payload, home))
    [memory] = memories_of(home, "s-tag")
    assert "grep -rn '[private:" in memory["content"] and "characters hidden, no closing tag]" in memory["content"]
    assert "docs/a.md:3: use [private:" in memory["content"]


def test_a_private_span_around_the_cut_of_a_huge_field_hides_its_middle(home: Path, project_dir: Path) -> None:
    middle = "launchcode " * 20_000
    output = f"head <private>{middle}</private> tail"
    payload = tool_call("s-huge", project_dir, "Bash", {"command": "cat notes"},
                        {"stdout": output, "stderr": "", "interrupted": False}, "t-huge")
    write_config(home, {"capture": {"max_result_chars": 1_000_000}})
    assert_quiet_success(run_hook("post_tool_use", payload, home))
    [memory] = memories_of(home, "s-huge")
    assert "launchcode" not in memory["content"] and "head" in memory["content"] and "tail" in memory["content"]


_MEGABYTE = 1_000_000
ADVERSARIAL = {
    "secret-words": "pass" * (_MEGABYTE // 4),
    "secret-names": "password=" * (_MEGABYTE // 9),
    "yaml-keys": "password:\n" * (_MEGABYTE // 10),
    "escaped-quotes": '\\"' * (_MEGABYTE // 2),
    "percent-escapes": "%5F" * (_MEGABYTE // 3),
    "entities": "&amp;" * (_MEGABYTE // 5),
    "private-tags": "<private>" * (_MEGABYTE // 9),
    "colons": "a:1:b:c:" * (_MEGABYTE // 8),
    "key-words": "key " * (_MEGABYTE // 4),
    "cookies": "Cookie: " * (_MEGABYTE // 8),
    "url-schemes": "a." * (_MEGABYTE // 2) + "://x@",
    "name-value": '{"name": "x", "value": ' * (_MEGABYTE // 23),
    "xml": "<password>" * (_MEGABYTE // 10),
    "config-lines": "password: abc123x  \n" * (_MEGABYTE // 20),
    "yaml-blocks": "password:\n  abc123x\n" * (_MEGABYTE // 20),
    "escaped-json-pairs": '{\\"api_key\\": \\"abc123x\\"}, ' * (_MEGABYTE // 28),
    "mixed": ("PASSWORD=abc123 " + "x" * 50 + ' \\"token\\": \\"v\\" %5F ') * (_MEGABYTE // 90),
    "invisible": "pass\u200bword=\u00ad" * (_MEGABYTE // 11),
    "full-width": "ｐａｓｓｗｏｒｄ＝ａ１" * (_MEGABYTE // 11),
    "base64-run": "QUJD" * (_MEGABYTE // 4),
    "base64-lines": ("QUJD" * 19 + "\n") * (_MEGABYTE // 77),
    "kubernetes": "kind: Secret\ndata:\n" + "  k: YWRtaW4=\n" * (_MEGABYTE // 14),
    "kubernetes-data-keys": "kind: Secret\n" + "data:\n" * (_MEGABYTE // 6),
    "kubernetes-json": '"kind": "Secret" ' + '"data": {"k": "v", ' * (_MEGABYTE // 20),
    # the second red-team pass: tables, SQL inserts, words of other languages
    "table-headers": "user,password\n" * (_MEGABYTE // 14),
    "table-rows": "user,password\n" + "a,Xy7kLm2pQ9\n" * (_MEGABYTE // 13),
    "markdown-cells": "| password | x |\n" * (_MEGABYTE // 17),
    "sql-unterminated": "insert into t(password) values ('" * (_MEGABYTE // 34),
    "other-language-words": "пароль от базы данных — " * (_MEGABYTE // 24),
    "glued-copulas": "密码是" * (_MEGABYTE // 3),
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_megabyte_adversarial_inputs_complete(name: str) -> None:
    """Linear scanning: a megabyte built to trip backtracking finishes (a generous subprocess timeout, no time assert)."""
    program = (f"import sys; sys.path.insert(0, {str(SRC)!r}); "
               "from ccmemory.redaction import redact; text = sys.stdin.read(); print(len(redact(text)))")
    result = subprocess.run([HOOK_PYTHON, "-S", "-c", program], input=ADVERSARIAL[name], capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 0 and int(result.stdout) > 0, result.stderr


def test_decoding_runs_on_the_hook_interpreter() -> None:
    """The hook path stays standard-library: redaction imports under the interpreter the hooks run on, with -S."""
    program = (f"import sys; sys.path.insert(0, {str(SRC)!r}); from ccmemory.redaction import redact; "
               "print(redact(sys.argv[1]))")
    result = subprocess.run([HOOK_PYTHON, "-S", "-c", program, 'x={\\"api_key\\": \\"Qv7mZ2xRt9Lw\\"}'],
                            capture_output=True, text=True, timeout=30)
    assert result.stdout.strip() == 'x={\\"api_key\\": \\"[REDACTED]\\"}', result.stderr
    assert sys.version_info >= (3, 9)


def test_disguised_secrets_are_redacted_by_the_capture_hook_and_nothing_else_changes(home: Path,
                                                                                      project_dir: Path) -> None:
    """Issue 25: the hook stores the original text, full-width letters, ligature and invisible characters
    included, with only the secrets (found in the normalised view, in a URL's query, in base64, in a
    Kubernetes Secret) replaced."""
    blob = base64.b64encode(b"DB_PASSWORD=Qv7mZ2xRt9Lw\n").decode()
    output = ("Résumé ｆｕｌｌ ﬁle — naïve\u200b\nｐａｓｓｗｏｒｄ＝hunter2xyz99 ok\ngh\u200bp_" + "aB3dE5gH7jK9mN1pQ3" * 2
              + "\nGET /geo?key=Qv7mZ2xRt9Lw&page=2 200\nENV=" + blob + "\nkind: Secret\ndata:\n  user: YWRtaW4=\n")
    payload = tool_call("s-u", project_dir, "Bash", {"command": "cat notes.txt"},
                        {"stdout": output, "stderr": "", "interrupted": False}, "t-u")
    assert_quiet_success(run_hook("post_tool_use", payload, home))
    [memory] = memories_of(home, "s-u")
    expected = ("Résumé ｆｕｌｌ ﬁle — naïve\u200b\nｐａｓｓｗｏｒｄ＝[REDACTED] ok\n[REDACTED]\nGET /geo?key=[REDACTED]&page=2 200\n"
                "ENV=[REDACTED]\nkind: Secret\ndata:\n  user: [REDACTED]")
    assert expected in memory["content"], memory["content"]


def test_a_secret_files_content_never_reaches_the_store(home: Path, project_dir: Path) -> None:
    """A master key, a bare token or a private key is a secret by its file's name alone: what the capture hook
    gets from writing, editing or printing such a file (or reading it through an MCP tool) is stored as a line
    saying how much was withheld, every byte of the data directory searched afterwards."""
    key, token = "8af457e24e260166b07139523942d17f", "s.Qv7mZ2xRt9Lw3kP0aB8cD"
    private = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB"
    payloads = [
        tool_call("s-f", project_dir, "Write", {"file_path": str(project_dir / "config" / "master.key"),
                                                "content": key + "\n"}, {"type": "create"}, "f1"),
        tool_call("s-f", project_dir, "Bash", {"command": "cat ~/.vault-token"},
                  {"stdout": token, "stderr": "", "interrupted": False}, "f2"),
        tool_call("s-f", project_dir, "Edit", {"file_path": str(project_dir / "deploy" / "id_ed25519"),
                                               "old_string": "x", "new_string": private}, {}, "f3"),
        tool_call("s-f", project_dir, "mcp__files__read_file", {"path": "config/master.key"},
                  {"content": [{"type": "text", "text": key}]}, "f4"),
        tool_call("s-f", project_dir, "Bash", {"command": "head -n 1 secrets.txt"},
                  {"stdout": token[::-1], "stderr": "", "interrupted": False}, "f5"),
        tool_call("s-f", project_dir, "MultiEdit", {"file_path": str(project_dir / ".vault-token"), "edits": [
            {"old_string": "old", "new_string": token.upper()}, {"old_string": 1, "new_string": None}]}, {}, "f6"),
    ]
    for payload in payloads:
        assert_quiet_success(run_hook("post_tool_use", payload, home))
    stored = memories_of(home, "s-f")
    assert len(stored) == len(payloads)
    assert all("content of a secret file withheld" in memory["content"] for memory in stored), stored
    files = b"".join(path.read_bytes() for path in home.rglob("*") if path.is_file())
    for secret in (key, token, token[::-1], token.upper(), private.splitlines()[1]):
        assert secret.encode() not in files
    # The public half and ordinary files are stored as before.
    public = tool_call("s-g", project_dir, "Write", {"file_path": str(project_dir / "id_ed25519.pub"),
                                                     "content": "ssh-ed25519 AAAAC3Nza bob@host"}, {}, "g1")
    assert_quiet_success(run_hook("post_tool_use", public, home))
    assert "ssh-ed25519 AAAAC3Nza bob@host" in memories_of(home, "s-g")[0]["content"]
