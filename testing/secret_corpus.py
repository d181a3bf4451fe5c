"""A corpus of realistic fake secrets and harmless look-alikes, built at test time.

The secrets are assembled from pieces and random characters here, so no literal in the
repository looks like a live credential to a scanner. Each case is (format, text in which the
secret appears as a developer would meet it, the secret itself).
"""

from __future__ import annotations

import base64
import random
import string
from typing import Callable

_RNG = random.Random(1107)
UPPER, LOWER, DIGITS = string.ascii_uppercase, string.ascii_lowercase, string.digits
ALNUM = UPPER + LOWER + DIGITS
HEX = "0123456789abcdef"
URLSAFE = ALNUM + "_-"


def _r(alphabet: str, n: int) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def _j(*parts: str) -> str:
    return "".join(parts)


def _each(fmt: str, make_secret: Callable[[], str], contexts: list[str]) -> list[tuple[str, str, str]]:
    """(format, text, secret) for each context, with a new secret in each."""
    return [(fmt, context.format(s=secret), secret) for context in contexts for secret in [make_secret()]]


def _cases() -> list[tuple[str, str, str]]:
    cases: list[tuple[str, str, str]] = []

    cases += _each("aws-access-key-id", lambda: _j("AK", "IA", _r(UPPER + "234567", 16)),
        ["aws configure set aws_access_key_id {s}", "Found key {s} in ~/.aws/credentials"])
    cases += _each("aws-secret-access-key", lambda: _r(ALNUM + "/+", 40),
        ["aws_secret_access_key = {s}", 'export AWS_SECRET_ACCESS_KEY="{s}"'])
    cases += _each("github-pat", lambda: _j("gh", "p_", _r(ALNUM, 36)),
        ["git remote set-url origin https://x-access-token:{s}@github.com/acme/api.git", "GH_TOKEN={s} gh pr list"])
    cases += _each("github-fine-grained", lambda: _j("github", "_pat_", _r(ALNUM, 22), "_", _r(ALNUM, 59)),
        ["token: {s}", "using {s} for the release workflow"])
    cases += _each("gitlab-pat", lambda: _j("gl", "pat-", _r(URLSAFE, 20)), ["CI_JOB_TOKEN={s}", "curl --header 'PRIVATE-TOKEN: {s}'"])
    cases += _each("slack-bot-token", lambda: _j("xo", "xb-", _r(DIGITS, 12), "-", _r(DIGITS, 13), "-", _r(ALNUM, 24)),
        ["SLACK_BOT_TOKEN={s}", "client = WebClient(token='{s}')"])
    cases += _each("slack-webhook", lambda: _j("T", _r(UPPER + DIGITS, 10), "/B", _r(UPPER + DIGITS, 10), "/", _r(ALNUM, 24)),
        ["curl -X POST https://hooks.slack.com/services/{s} -d @msg.json",
                    "webhook_url: https://hooks.slack.com/services/{s}"])
    cases += _each("stripe-secret", lambda: _j("sk", "_live_", _r(ALNUM, 24)),
        ["stripe.api_key = '{s}'", "Stripe key {s} was rotated"])
    cases += _each("stripe-webhook", lambda: _j("wh", "sec_", _r(ALNUM, 32)), ["STRIPE_WEBHOOK_SECRET={s}", "signing secret {s}"])
    cases += _each("openai-key", lambda: _j("sk", "-proj-", _r(URLSAFE, 48)),
                   ["OPENAI_API_KEY={s}", "client = OpenAI(api_key=\"{s}\")"])
    cases += _each("anthropic-key", lambda: _j("sk", "-ant-api03-", _r(URLSAFE, 93), "AA"),
        ["export ANTHROPIC_API_KEY={s}", "x-api-key: {s}"])
    cases += _each("google-api-key", lambda: _j("AI", "za", "Sy", _r(URLSAFE, 33)),
        ["https://maps.googleapis.com/maps/api/geocode/json?key={s}", "GOOGLE_API_KEY: {s}"])
    cases += _each("npm-token", lambda: _j("np", "m_", _r(ALNUM, 36)),
        ["//registry.npmjs.org/:_authToken={s}", "NPM_TOKEN={s} npm publish"])
    cases += _each("pypi-token", lambda: _j("py", "pi-", "AgEIcHlwaS5vcmc", _r(URLSAFE, 70)),
        ["twine upload -u __token__ -p {s} dist/*", "password = {s}"])
    cases += _each("huggingface-token", lambda: _j("h", "f_", _r(ALNUM, 34)), ["HF_TOKEN={s}", "huggingface-cli login --token {s}"])
    cases += _each("twilio-api-key", lambda: _j("S", "K", _r(HEX, 32)), ["TWILIO_API_KEY={s}", "client = Client('{s}', secret)"])
    cases += _each("sendgrid-key", lambda: _j("S", "G.", _r(URLSAFE, 22), ".", _r(URLSAFE, 43)),
        ["SENDGRID_API_KEY={s}", "sg = SendGridAPIClient('{s}')"])
    cases += _each("mailgun-key", lambda: _j("ke", "y-", _r(HEX, 32)), ["MAILGUN_API_KEY={s}", "auth=('api', '{s}')"])
    cases += _each("digitalocean-token", lambda: _j("do", "p_v1_", _r(HEX, 64)), ["doctl auth init -t {s}", "DO_TOKEN={s}"])
    cases += _each("azure-account-key", lambda: base64.b64encode(_RNG.randbytes(64)).decode(),
        ["DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={s};EndpointSuffix=core.windows.net",
                    "az storage blob list --account-key {s}"])
    cases += _each("discord-bot-token", lambda: _j("M", _r(ALNUM, 23), ".", _r(URLSAFE, 6), ".", _r(URLSAFE, 27)),
        ["DISCORD_TOKEN={s}", "bot.run('{s}')"])
    cases += _each("discord-webhook", lambda: _j(_r(DIGITS, 18), "/", _r(URLSAFE, 68)),
        ["curl -d '{{}}' https://discord.com/api/webhooks/{s}", "hook https://discordapp.com/api/webhooks/{s}"])
    cases += _each("telegram-bot-token", lambda: _j(_r(DIGITS, 10), ":AA", _r(URLSAFE, 33)),
        ["curl https://api.telegram.org/bot{s}/getMe", "TELEGRAM_TOKEN={s}"])
    cases += _each("jwt", lambda: ".".join([base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("="),
                                            base64.urlsafe_b64encode(_j('{"sub":"', _r(DIGITS, 8), '","admin":true}').encode())
                                            .decode().rstrip("="), _r(URLSAFE, 43)]),
        ["Cookie: session={s}", "the id_token was {s}"])
    cases += _each("private-key", lambda: _r(ALNUM + "+/", 64),
        ["-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA{s}\n-----END RSA PRIVATE KEY-----",
                    '{{"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQ{s}\\n-----END PRIVATE KEY-----\\n"}}'])
    cases += _each("url-password", lambda: _r(ALNUM, 14),
        ["DATABASE_URL=postgres://app:{s}@db.internal:5432/prod", "git clone https://deploy:{s}@git.example.com/r.git"])
    cases += _each("authorization-basic", lambda: base64.b64encode(_j("admin:", _r(ALNUM, 12)).encode()).decode(),
        ["curl -H 'Authorization: Basic {s}' https://api.example.com", "authorization: Basic {s}"])
    cases += _each("bearer-token", lambda: _r(ALNUM, 40),
        ["Authorization: Bearer {s}", "requests.get(url, headers={{'Authorization': 'Bearer {s}'}})"])
    cases += _each("docker-login", lambda: _r(ALNUM, 20), ["docker login -u ci -p {s} registry.example.com",
                                                           "podman login --password {s} quay.io"])
    cases += _each("curl-user", lambda: _r(ALNUM, 16), ["curl -u admin:{s} https://jenkins.local/api/json",
                                                        "curl --user deploy:{s} -X POST https://ci.example.com"])
    cases += _each("mysql-inline", lambda: _r(ALNUM, 12),
                   ["mysql -u root -p{s} -h 127.0.0.1 app", "mysqldump -uroot -p{s} app > dump.sql"])
    cases += _each("sshpass", lambda: _r(ALNUM, 12), ["sshpass -p {s} ssh root@10.0.0.5", "sshpass -p '{s}' scp f host:"])
    cases += _each("env-password", lambda: _r(LOWER, 8) + _r(DIGITS, 4),
        ["DB_PASSWORD={s}", "DEBUG: DB_PASSWORD={s}", "MYSQL_ROOT_PASSWORD: {s}"])
    cases += _each("json-secret", lambda: _r(ALNUM, 24), ['{{"client_secret": "{s}", "client_id": "web"}}',
                                                          '"apiKey": "{s}",'])
    cases += _each("vault-token", lambda: _j("hv", "s.", _r(URLSAFE, 90)), ["VAULT_TOKEN={s}", "vault login {s}"])
    cases += _each("shopify-token", lambda: _j("shp", "at_", _r(HEX, 32)), ["X-Shopify-Access-Token: {s}", "SHOPIFY_TOKEN={s}"])
    cases += _each("databricks-token", lambda: _j("da", "pi", _r(HEX, 32)),
                   ["DATABRICKS_TOKEN={s}", "databricks configure --token {s}"])
    cases += _each("age-secret-key", lambda: _j("AGE-SEC", "RET-KEY-1", _r("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
        ["# created: 2024\n{s}", "age key {s}"])
    cases += _each("grafana-token", lambda: _j("gl", "sa_", _r(ALNUM, 32), "_", _r(HEX, 8)), ["GRAFANA_TOKEN={s}", "token {s}"])
    cases += _each("redis-cli", lambda: _r(ALNUM, 16), ["redis-cli -h cache -a {s} ping"])
    cases += _each("netrc", lambda: _r(ALNUM, 16), ["machine api.heroku.com\n  login me@example.com\n  password {s}"])
    return cases


def _password() -> str:
    return _j(_r(UPPER, 2), _r(LOWER, 5), _r(DIGITS, 3), _r(LOWER, 4))


def _symbolic(lead: str) -> str:
    """A password starting with ``lead`` ($ or %), as people choose them: not a variable reference."""
    return _j(lead, _r(UPPER, 1), _r(LOWER, 4), _r(DIGITS, 2), "!", _r(ALNUM, 6))


def _passphrase() -> str:
    words = ["correct", "horse", "battery", "staple", "orange", "violet", "tundra", "marble", "quartz", "lantern"]
    return ".".join(_RNG.sample(words, 4)) + _r(DIGITS, 2)


def issue19_cases() -> list[tuple[str, str, str]]:
    """The forms issue 19 found reaching the database, several variants each (format, text, secret)."""
    cases: list[tuple[str, str, str]] = []

    cases += _each("env-glued-name", _password, ["PGPASSWORD={s} psql -h db.internal app", "export SSHPASS='{s}'",
                                                 "SSHPASS={s} sshpass -e ssh deploy@10.0.0.7", "MYSQL_PWD={s} mysql -u root",
                                                 "set ADMINPASS={s}", "$env:DBPASSWORD = \"{s}\""])
    cases += _each("env-key-name", _password, ["FERNET_KEY={s}", "export DJANGO_SECRET_KEY=\"{s}\"", "SIGNING_KEY: {s}",
                                               "ENCRYPTION_KEY={s} ./run.sh", "docker run -e MASTER_KEY={s} app"])
    cases += _each("gate-word", _password, ["cookie={s}", "salt: {s}", "SENTRY_DSN={s}", "otp = '{s}'", "signature={s}",
                                            "x-hub-signature: {s}", "session_cookie={s}", "pin: {s}"])
    cases += _each("cookie-header", _password, ["Cookie: theme=dark; session={s}; lang=en",
                                                "curl -H 'Cookie: csrftoken=abc; sessionid={s}' https://app.local",
                                                "Set-Cookie: sid={s}; Path=/; HttpOnly; Secure", "curl -b 'session={s}' https://x"])
    cases += _each("pgpass-line", _password, ["db.internal:5432:app:appuser:{s}", "*:*:*:postgres:{s}",
                                              "echo 'localhost:5432:*:me:{s}' >> ~/.pgpass"])
    cases += _each("netrc-line", _password, ["machine api.github.com login octo password {s}",
                                             "default login anonymous password {s}"])
    cases += _each("dollar-password", lambda: _symbolic("$"), ["DB_PASSWORD={s}", "password: {s}", '{{"password": "{s}"}}'])
    cases += _each("percent-password", lambda: _symbolic("%"), ["DB_PASSWORD={s}", "password: {s}", "--password {s}"])
    cases += _each("dotted-passphrase", _passphrase, ["passphrase: {s}", "GPG_PASSPHRASE={s}", "password = {s}"])
    cases += _each("yaml-next-line", _password, ["password:\n  {s}\nuser: app", "db:\n  password: |\n    {s}\n  host: x",
                                                 "token: >-\n  {s}\nnext: 1"])
    cases += _each("escaped-json", _password, ['{{\\"db_password\\": \\"{s}\\"}}', '"{{\\"apiKey\\":\\"{s}\\"}}"',
                                               'echo "{{\\"token\\": \\"{s}\\", \\"user\\": 1}}"'])
    cases += _each("url-encoded-name", _password, ["db%5Fpassword={s}", "pass%77ord={s}&user=bob", "%70assword={s}",
                                                   "api%5Fkey={s}"])
    cases += _each("kubeconfig", lambda: _j("LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo", _r(ALNUM + "+/", 60)),
        ["    client-key-data: {s}", "client-key-data: {s}"])
    cases += _each("kubeconfig-token", _password, ["    token: {s}"])
    cases += _each("php-define", _password, ["define('DB_PASSWORD', '{s}');", 'define("AUTH_KEY", "{s}");',
                                             "'password' => '{s}',", "$cfg['db_password'] = '{s}';"])
    cases += _each("call-argument", _password, ['psycopg2.connect(user="app", password="{s}")',
                                                "os.environ['API_TOKEN'] = '{s}'", "getenv('SECRET_KEY', '{s}')"])
    return cases


def redteam_cases() -> list[tuple[str, str, str]]:
    """Families a red-team pass found reaching the database, one or two representatives each (format, text, secret)."""
    cases: list[tuple[str, str, str]] = []

    cases += _each("authorization-any-scheme", lambda: _j("00", _r(URLSAFE, 40)),
        ["Authorization: SSWS {s}", 'curl -H "Authorization: GenieKey {s}" https://api.example.com'])
    cases += _each("basic-credential", lambda: base64.b64encode(_j("admin:", _password()).encode()).decode(),
        ['proxy_set_header Authorization "Basic {s}";', "AUTH_HEADER='Basic {s}'"])
    cases += _each("line-continuation", _password,
                   ["export DB_PASSWORD=\\\n{s}", "aws configure set aws_secret_access_key \\\n    {s}"])
    cases += _each("yaml-anchor-tag", _password, ["db:\n  password: &dbpw {s}\n  replica: *dbpw", "smtp:\n  password: !!str {s}"])
    cases += _each("setter-call", _password, ['DataSourceBuilder.create().username("sa").password("{s}").build();',
                                              "client.setApiKey('{s}');"])
    cases += _each("sql-identified-by", _password, ["ALTER USER app IDENTIFIED BY '{s}';",
                                                    "CREATE USER 'app'@'%' IDENTIFIED WITH mysql_native_password BY '{s}';"])
    cases += _each("oracle-connect", _password, ["jdbc:oracle:thin:scott/{s}@//db.example.com:1521/ORCL", "sqlplus system/{s}@XEPDB1"])
    cases += _each("net-use", _password, ["net use Z: \\\\fs\\share /user:corp\\bob {s}"])
    cases += _each("url-password-slash", lambda: _r(ALNUM + "/+", 40), ["celery -b 'sqs://AKIDEXAMPLE:{s}@'"])
    cases += _each("php-var-dump", _password, ['  ["password"]=>\n  string(14) "{s}"'])
    cases += _each("other-language-name", _password, ["passwort = {s}", "DB_KENNWORT={s}", "senha: {s}", "setenv DB_PASSWORD {s}"])
    cases += _each("glued-auth", _password, ["masterauth {s}"])
    cases += _each("prefixed-random-token", lambda: _j(_r(LOWER, 3), "_", _r(ALNUM, 40)), ["found {s} in config.js"])
    cases += _each("vendor-prefix", lambda: _j("dckr", "_pat_", _r(URLSAFE, 27)), ["DOCKERHUB used {s}"])
    cases += _each("vendor-prefix", lambda: _j("fi", "gd_", _r(URLSAFE, 40)), ["echo {s}"])
    cases += _each("vendor-prefix", lambda: _j("access_token", "$production$", _r(LOWER + DIGITS, 16), "$", _r(HEX, 32)),
        ["gateway token {s}"])
    return cases


def code_and_command_cases() -> list[tuple[str, str, str]]:
    """Secrets in code before which other code stands, in commands that take a user and a password, and in
    English prose of other word orders: families of the fourth red-team pass (format, text, secret)."""
    cases: list[tuple[str, str, str]] = []

    cases += _each("wrapped-literal", _password, [
        'String password = new String("{s}");', 'let db_password: String = String::from("{s}");',
        'var jwtKey = []byte("{s}")', "SIGNING_KEY = b'{s}'", 'secret = bytes("{s}", "utf-8")',
        "const secret = new TextEncoder().encode('{s}');", 'password: Some("{s}".into()),',
        'val apiKey by lazy {{ "{s}" }}', 'const API_SECRET: &str = "{s}";'])
    cases += _each("fallback-literal", _password, [
        "password = os.environ.get('DB_PASSWORD') or '{s}'", "const key = process.env.API_KEY || '{s}';",
        "const token = process.env.GH_TOKEN ?? '{s}';", 'db_password: str = Field(default="{s}")',
        'var pw = new NetworkCredential("", "{s}").SecurePassword;', "jwt.verify(token, '{s}')",
        "parser.add_argument('--password', default='{s}')", "DEPLOY_TOKEN ?= {s}"])
    cases += _each("code-credential", _password, [
        "const t = jwt.sign({{ sub: user.id }}, '{s}', {{ expiresIn: '1h' }});",
        "headers: {{ Authorization: 'Basic ' + btoa('ops:{s}') }}"])
    cases += _each("aws-secret-after-key-id", lambda: _r(ALNUM + "/+", 40), [
        _j("new AWS.Credentials('AK", "IA", _r(UPPER + "234567", 16), "', '{s}')")])
    cases += _each("user-password-flags", _password, [
        "rdesktop -u Administrator -p {s} 10.0.0.4", "evil-winrm -i 10.0.0.4 -u Administrator -p '{s}'",
        "twine upload -u ci -p {s} dist/*", "ipmitool -I lanplus -H 10.0.0.20 -U ADMIN -P {s} power status",
        "xfreerdp /v:10.0.0.4 /u:Administrator /p:{s} /cert:ignore", "winrs -r:srv01 -u:CORP\\admin -p:{s} ipconfig"])
    cases += _each("command-password", _password, [
        "lftp -u backup,{s} sftp://files.example.com", "secretsdump.py CORP/admin:{s}@10.0.0.4",
        "db2 connect to SAMPLE user db2inst1 using {s}", "bw unlock {s} --raw", "cf auth ci {s}",
        "htpasswd -nbB admin {s}", "printf 'ops:{s}\\n' | chpasswd"])
    cases += _each("stdin-password", _password, [
        "echo {s} | openconnect --user ops --passwd-on-stdin vpn.example.com",
        "echo '{s}' | gpg --batch --passphrase-fd 0 -d f.gpg", "echo {s} | op signin --raw",
        "echo '{s}' | pass insert -e prod/db", "mysql_config_editor set --login-path=prod --password <<< {s}"])
    cases += _each("printed-secret", _password, [
        "op read op://prod/db/password\n{s}", "kubectl get secret db -o jsonpath='{{.data.password}}' | base64 -d\n{s}",
        "heroku auth:token\n{s}"])
    cases += _each("prose-word-order", _password, [
        "I set the root password to {s} yesterday", "changed the db password to {s}", "the password is now {s}",
        "API key - {s}", "use {s} as the password for the staging db", "{s} is the API key for prod",
        "Here is the API key for staging: {s}"])
    cases += _each("secret-name-prefix", _password, ["export TF_TOKEN_app_terraform_io={s}",
                                                      "export POETRY_PYPI_TOKEN_TESTPYPI={s}"])
    cases += _each("secret-name-plural", _password, ["API_KEYS={s}", "ROOTPW={s}", "GITHUB_PAT={s}",
                                                      "WALLET_SEED={s}", "LICENSE_CODE={s}"])
    cases += _each("service-url-key", lambda: _r(HEX, 32), ["RPC_URL=https://mainnet.infura.io/v3/{s}"])
    cases += _each("service-url-key", lambda: _r(LOWER + DIGITS, 26), ["MATTERMOST_HOOK=https://chat.example.com/hooks/{s}"])
    cases += _each("connect-call", _password, [
        "$pdo = new PDO('mysql:host=localhost;dbname=app', 'root', '{s}');",
        "$link = mysqli_connect('localhost', 'root', '{s}', 'shop');",
        'pymysql.connect("db.internal", "svc_etl2024", "{s}")', "cx_Oracle.connect('scott2024', '{s}', 'ora01/ORCL')",
        'Connection c = DriverManager.getConnection(url, "sa", "{s}");', "ftp = FTP('ftp.example.com', 'backup', '{s}')",
        "conn = Connection(server, 'cn=admin,dc=example,dc=org', '{s}', auto_bind=True)",
        'client.get(url).basic_auth("admin", Some("{s}")).send()?',
        'db, err := sql.Open("mysql", "app:{s}@tcp(10.0.0.5:3306)/app?parseTime=true")'])
    cases += _each("structured-output", _password, [
        '{{\n  "db_password": {{\n    "sensitive": true,\n    "type": "string",\n    "value": "{s}"\n  }}\n}}',
        '{{"Parameter": {{"Name": "/prod/db/password", "Type": "SecureString", "Value": "{s}", "Version": 3}}}}',
        "curl 'https://api.openweathermap.org/data/2.5/weather?q=Oslo&appid={s}'"])
    cases += _each("aligned-columns", _password, [
        'do_token          = "{s}"\nregion            = "fra1"',
        "    Environment:\n      DB_PASSWORD:                  {s}\n      LOG_LEVEL:      info"])
    cases += _each("dotted-password", lambda: _j(_r(UPPER, 1), ".", _r(LOWER, 6), _r(DIGITS, 4), "!"),
                   ["PGPASSWORD={s}", "java -jar app.jar --spring.datasource.password={s} --server.port=8080"])
    cases += _each("secret-store-command", _password, [
        "aws ssm put-parameter --name /prod/db/password --type SecureString --value '{s}' --overwrite",
        "az keyvault secret set --vault-name acme-kv --name db-password --value '{s}'",
        'printf "{s}" | gcloud secrets versions add db-password --data-file=-',
        "mc alias set prod https://minio.example.com AKIDEXAMPLE {s}", "poetry config http-basic.acme ci-user {s}",
        "redis-cli -h cache -p 6379 -a '{s}' --no-auth-warning INFO", "here is the token `{s}`, add it to CI",
        "creds for the test account: jsmith / {s}"])
    cases += _each("discord-bot-token-bare", lambda: _j(base64.b64encode(_r(DIGITS, 18).encode()).decode().rstrip("="),
                                                         ".", _r(URLSAFE, 6), ".", _r(URLSAFE, 38)),
                   ["see: {s}", 'value = "{s}"'])
    cases += _each("newrelic-license-key", lambda: _j(_r(HEX, 36), "NRAL"), ["see: {s}"])
    cases += _each("mailgun-private-key", lambda: _j(_r(HEX, 32), "-", _r(HEX, 8), "-", _r(HEX, 8)), ["see: {s}"])
    cases += _each("pgp-secret-key", lambda: _r(ALNUM + "/+", 64),
                   ["-----BEGIN PGP SECRET KEY BLOCK-----\nVersion: GnuPG v1\n\n{s}\n-----END PGP SECRET KEY BLOCK-----"])
    return cases


def _mixed_letters() -> str:
    """A password of letters alone, as some generators make them: small and capital letters mixed."""
    return "".join(_RNG.choice(LOWER) + _RNG.choice(UPPER) + _RNG.choice(LOWER) for _ in range(4))


def prose_cases() -> list[tuple[str, str, str]]:
    """Secrets said in prose in other languages (and forms found beside them), several variants each."""
    cases: list[tuple[str, str, str]] = []

    cases += _each("other-language-prose", _password, [
        "пароль: {s}", "Пароль от базы — {s}", "API ключ: {s}", "токен для деплоя: {s}", "密码：{s}",
        "数据库密码是 {s}，请保管好", "数据库的密码为{s}。", "パスワードは「{s}」です", "パスワード: {s}",
        "비밀번호는 {s} 입니다", "la contraseña es {s}.", "le mot de passe est {s}", "mot de passe : « {s} »",
        "la password è {s}", "a senha do banco é {s}", "Das Passwort für die Datenbank lautet {s}",
        "passordet er {s}", "lösenordet är {s}", "hasło to {s}", "şifre: {s}", "κωδικός: {s}", "סיסמה: {s}",
        "كلمة المرور: {s}", "पासवर्ड: {s}", "mật khẩu là {s}", "kata sandi: {s}"])
    cases += _each("other-language-key", _password, ["API-Schlüssel: {s}", "Der API-Schlüssel lautet {s}", "clé API : {s}",
                                                       "le jeton d'accès est {s}", "chave da API: {s}", "chiave segreta: {s}",
                                                       "klucz API: {s}", "API-nyckel: {s}", "APIキー: {s}", "API 키: {s}",
                                                       "contraseña de la base de datos: {s}"])
    cases += _each("letters-only-prose", _mixed_letters, ["the admin password is {s}", "пароль: {s}", "API key: {s}"])
    cases += _each("prose", _password, ["the password for the staging db is {s}", "the token for the CI runner was {s}"])
    cases += _each("qualified-key-space", lambda: _r(HEX, 40), ["datadog app key {s}", "Rotated the deploy token {s} today"])
    cases += _each("qualified-key-space", lambda: _r(ALNUM, 14), ["sumologic access key {s}", "use the API key  {s} for staging"])
    cases += _each("login-pair", _password, ["login with admin / {s}", "Signed in as ops / {s} on the staging box",
                                             "the credentials for staging are bob / {s}"])
    cases += _each("vendor-prefix", lambda: _j("oy2", _r(LOWER + DIGITS, 43)), ["nuget push pkg.nupkg -k {s}"])
    cases += _each("webhook-url", lambda: _j(_r(HEX, 8), "-", _r(HEX, 4), "@", _r(HEX, 8), "/IncomingWebhook/", _r(HEX, 32)),
        ["curl -X POST https://contoso.webhook.office.com/webhookb2/{s} -d @card.json"])
    cases += _each("user-secrets", _password, ['dotnet user-secrets set "Stripe:SecretKey" "{s}"',
                                               "dotnet user-secrets set ConnectionStrings:Db {s}"])
    cases += _each("authorization-any-scheme", lambda: _j("00", _r(URLSAFE, 40)), ["okta: SSWS {s}"])
    cases += _each("system-property", _password, ["java -Djavax.net.ssl.keyStorePassword={s} -jar app.jar",
                                                  "mvn deploy -Dgpg.passphrase='{s}'"])
    cases += _each("other-language-name", _password, ["Enter PEM pass phrase: {s}"])
    cases += _each("cli-argument", _password, ["net user bob {s} /add", "schtasks /create /tn nightly /ru svc /rp {s} /tr run.cmd",
                                               "useradd -m -p $(openssl passwd -6 {s}) bob",
                                               "security add-generic-password -a bob -s api -w {s}",
                                               "rabbitmqctl add_user app {s}"])
    cases += _each("stdin-secret", _password, ["echo -n {s} | gh secret set DB_PASSWORD", "docker secret create db_pw - <<< {s}",
                                               "printf %s '{s}' | wrangler secret put API_KEY"])
    cases += _each("code-argument", _password, ['smtp.login("ops@example.com", "{s}")', 'requests.get(url, auth=("bob", "{s}"))',
                                                 'HTTPBasicAuth("bob", "{s}")', 'conn.simple_bind_s("cn=admin,dc=x", "{s}")',
                                                 'jwt.encode(payload, "{s}", algorithm="HS256")',
                                                 'hmac.new(b"{s}", body, hashlib.sha256)', 'Fernet(b"{s}")'])
    cases += _each("redis-auth", _password, ["127.0.0.1:6379> AUTH {s}\nOK", "AUTH default {s}"])
    cases += _each("expect-script", _password, ['expect "Password:"\nsend "{s}\\r"\nexpect eof',
                                                'child.expect("passphrase")\nchild.sendline("{s}")'])
    cases += _each("vendor-prefix", lambda: _j("AKC", "p", _r(ALNUM, 69)), ["ARTIFACTORY={s}"])
    cases += _each("vendor-prefix", lambda: _j("cmVmdGtu", _r(ALNUM, 56)), ["jf config add --access-token {s}"])
    cases += _each("vendor-prefix", lambda: _j("GR1348941", _r(URLSAFE, 20)), ["gitlab-runner register --registration-token {s}"])
    cases += _each("vendor-prefix", lambda: _j("amzn.mws.", _r(HEX, 8), "-", _r(HEX, 4), "-", _r(HEX, 4), "-", _r(HEX, 4), "-",
                                               _r(HEX, 12)), ["mws: {s}"])
    cases += _each("vendor-prefix", lambda: _j("eyJrIjoi", _r(ALNUM, 60)), ["grafana key {s}"])
    cases += _each("webhook-url", lambda: _j(_r(DIGITS, 7), "/", _r(LOWER + DIGITS, 6)), ["https://hooks.zapier.com/hooks/catch/{s}/"])
    cases += _each("webhook-url", lambda: _j(_r(HEX, 8), "@", _r(HEX, 8), "/IncomingWebhook/", _r(HEX, 32)),
        ["https://outlook.office.com/webhook/{s}"])
    cases += _each("vault-init", lambda: _j(_r(ALNUM + "+/", 43), "="), ["Unseal Key 1: {s}", "Recovery Key 3: {s}"])
    return cases


def _made_up() -> str:
    """A password as people make them up: a word, a dot or an underscore, a word, four digits and a symbol."""
    word = _RNG.choice(["Juniper", "Velvet", "Winter", "Harbor", "Maple", "Copper"])
    return _j(word, _RNG.choice("._"), _RNG.choice(["blue", "orchid", "velvet", "stone"]), _r(DIGITS, 4), _RNG.choice("!#%"))


def _generated() -> str:
    """A generated token: letters of both cases and digits, mixed."""
    return "".join(_RNG.choice(LOWER) + _RNG.choice(UPPER) + _RNG.choice(DIGITS + LOWER) for _ in range(6))


def window_cases() -> list[tuple[str, str, str]]:
    """A secret word, a few more words of the sentence, then the secret, or the secret first, in several languages
    (drawn last, so the random values of the families before stay as they were)."""
    contexts = ["I rotated the key, new one: {s}", "la contraseña de la base de datos de producción es {s}",
                "rote la clave, la nueva es {s}", "j'ai changé le jeton, le nouveau : {s}", "вот мой токен {s}",
                "the staging password changed again, it's now {s}", "neuer Schlüssel fürs Deployment: {s}",
                "o token do bot mudou, agora é {s}", "secret for the webhook (prod only) = {s}"]
    contexts += ["{s} is what the new token looks like, don't paste it anywhere", "{s} es la nueva contraseña del Stripe",
                 "{s} c'est le nouveau jeton pour SendGrid", "{s} — это новый токен для GitLab", "Done. {s} is the key"]
    hexadecimal = ["token Mailgun – {s}", "Ho appena ruotato la chiave di prod, da adesso usa {s} per favore."]
    return (_each("secret-word-window", _made_up, contexts) + _each("secret-word-window", _generated, contexts)
            + _each("secret-word-window", lambda: _r(HEX, 32), hexadecimal)
            + _each("secret-word-window", lambda: _r(HEX, 64), hexadecimal))


def bracketed_cases() -> list[tuple[str, str, str]]:
    """A secret in brackets a few words after its secret word, up to ten words after it, base64 of a length base64
    never has, hexadecimal keys of either case on either side of their secret word, and the secret words of more
    languages (Dutch, Polish, Czech, Swedish, Norwegian, Danish, Finnish, Turkish, Italian, German and Russian
    word forms); drawn after the look-alikes, so every value drawn before stays as it was."""
    contexts = ["Logged into GitLab with the admin password ({s}) and reset the webhooks.",
                "Connecte-toi à Heroku avec la clé API ({s}) puis relance le job.",
                "log in op grafana met het admin-wachtwoord ({s}) en herstart de service.",
                "Zaloguj się do Redis hasłem admina {s} i sprawdź logi.",
                "зашёл в datadog под админским паролем {s} и перезапустил воркеры.",
                "Nové heslo k databázi je {s}", "Lösenordet till servern är {s}", "passordet til ruteren er {s}",
                "adgangskoden til wifi er {s}", "Palvelimen salasana on {s}", "Sunucu şifresi: {s}",
                "le credenziali di staging sono admin / {s}", "pwd for the jump host is {s}",
                "a chave de API do Redis para prod, a de produção: {s}", "ZUGANGSDATEN Postgres: admin / {s}"]
    # base64 of a length base64 never has (cut or mistyped when pasted), after its secret word
    unpadded = ["ho appena ruotato la chiave di staging, da adesso usa {s} per favore.", "TOKEN DO REDIS - {s}"]
    # hexadecimal keys of either case, before their secret word too
    hexadecimal = ["{s} è la nuova password di Twilio, non condividerla.", "{s} — это новый токен для Jira",
                   "la clave API de Sentry para dev, la buena: {s}", "token GitLab — {s}"]
    # the values before their secret word come first: the import test's titles and headings cut the last chunk
    # of the corpus at 200 characters, which could cut such a text between its value and its word
    return (_each("secret-word-window", lambda: _r(HEX, 32), hexadecimal)
            + _each("secret-word-window", lambda: _r(HEX, 64).upper(), hexadecimal)
            + _each("secret-word-window", _made_up, contexts) + _each("secret-word-window", _generated, contexts)
            + _each("secret-word-window", lambda: _j(_r(ALNUM + "+/", 29), "=="), unpadded))


def _joined_words() -> str:
    """A password of words joined by a symbol and a number, as people make them up (oakleaf/RIVER/77)."""
    first, second = _RNG.sample(["oakleaf", "river", "Lantern", "sole", "Kettle", "rain", "Lale", "Kule"], 2)
    return _j(first, _RNG.choice("/-."), second.upper() if _RNG.random() < 0.5 else second, _RNG.choice("/-."),
              _r(DIGITS, 2))


def _joined_other_words() -> str:
    """The same in the letters of another language (Медведь_Зима_77, Älgen-Springer-29)."""
    words = _RNG.choice([["Медведь", "Зима", "Берёза", "Волна"], ["Älgen", "Springer", "Ön", "Skärgård"]])
    return _RNG.choice("_-").join([*_RNG.sample(words, 2), _r(DIGITS, 2)])


def _luhn_digit(digits: str) -> str:
    total = sum(d if i % 2 else (d * 2 - 9 if d > 4 else d * 2) for i, d in enumerate(map(int, reversed(digits))))
    return str(-total % 10)


def _card() -> str:
    """A payment card number as printed, valid by its check digit (a made-up one of the Visa range)."""
    body = "4" + _r(DIGITS, 14)
    number = body + _luhn_digit(body)
    return " ".join(number[i:i + 4] for i in range(0, 16, 4))


def more_forms_cases() -> list[tuple[str, str, str]]:
    """The forms of the sixth red-team pass: values in other letters, compounds, more copulas and set-to phrasings,
    a value on the line after its label, one-time codes, Wi-Fi codes and card numbers (drawn last, so every value
    drawn before stays as it was)."""
    other = ["Пароль от сервера: {s}", "Lösenordet till databasen är {s}.", "пароль: {s}"]
    joined = ["The password for the sandbox is literally {s} lol", "fyi the db password changed to {s}",
              "Veritabanı şifresi {s}, bunu .env dosyasına ekle.", "Parola este {s}", "parolam: {s}",
              "كلمة المرور هي {s}", "הסיסמה היא {s}", "Das Datenbankpasswort lautet {s}"]
    generated = ["Mein Zugangstoken ist {s}, der läuft morgen ab.", "mera API token ye hai: {s} isko header me lagao",
                 "Password:\n{s}\n\nUser: root", "$ printenv DATABASE_PASSWORD\n{s}", '$ echo "$API_TOKEN"\n{s}',
                 "WIFI:S:CafeGuest;T:WPA;P:{s};;"]
    base32 = "abcdefghijklmnopqrstuvwxyz234567"
    cases = (_each("other-letters", _joined_other_words, other) + _each("joined-words", _joined_words, joined)
             + _each("next-line", _generated, generated)
             + _each("one-time-seed", lambda: _r(base32.upper(), 16), ["MFA_SEED={s}", "totp_seed: {s}"])
             + _each("one-time-seed", lambda: " ".join(_r(base32, 4) for _ in range(8)),
                     ["2FA setup key (enter manually): {s}"])
             + _each("card-number", _card, ["pay with card {s} exp 09/27", "Karte: {s}"]))
    for _ in range(2):  # a token's rest on the next line: wrapped by a terminal, split into literals, folded
        rest = _generated()
        cases.append(("split-token", f"the token is ghp_{_generated()[:20]}\n{rest}  (terminal wrapped it)", rest))
        cases.append(("split-token", f'STRIPE_KEY = (\n    "sk_live_{_generated()[:16]}"\n    "{rest}"\n)', rest))
        folded = _j(_r(ALNUM + "+/", 40), "==")
        cases.append(("split-token", f"AccountKey={_r(ALNUM + '+/', 44)}\n  {folded}", folded))
    codes = [_j(_r(LOWER + DIGITS, 5), "-", _r(DIGITS, 2), _r(LOWER, 3)) for _ in range(6)]
    cases.append(("recovery-codes", "Your GitHub recovery codes:\n" + "\n".join(codes), codes[3]))
    numbers = [_r(DIGITS, 8) for _ in range(4)]
    cases.append(("recovery-codes", "backup codes: " + " ".join(numbers), numbers[2]))
    # a second round: more languages' word orders, a card number unspaced after a card word, vault login, and a
    # Hardhat network's private key
    said = ["Le mot de passe de l'admin c'est {s}, tu peux te connecter", "зайди на сервер под root, пароль {s}",
            "सर्वर का पासवर्ड है {s}, कृपया लॉग चेक करो", "รหัสผ่านของเซิร์ฟเวอร์คือ {s} กรุณาตรวจสอบ",
            "رمز عبور سرور {s} است، لطفاً"]
    cases += _each("joined-words", _joined_words, said)
    cases += _each("other-letters", lambda: _RNG.choice(["سلام", "نور", "قمر"]) + "٢٠٢٤" + _RNG.choice(["نور", "بحر"]),
                   ["كلمة السر للراوتر: {s}"])
    cases += _each("card-number", lambda: _card().replace(" ", ""),
                   ["Mi tarjeta es {s}, vence 03/28", '{{"object": "card", "number": "{s}", "exp_month": 11}}'])
    cases += _each("vault-login", lambda: _j("s.", _r(ALNUM, 20), _r(DIGITS, 2), _r(ALNUM, 2)), [": 1717171717:0;vault login {s}"])
    cases += _each("ethereum-key", lambda: _r(HEX, 64), ['      accounts: ["0x{s}"],'])
    # a third round (the ninth blind set): a quoted curl password, a database login's positional password as PHP's
    # stack trace and code give it, a key under a field called only "key", a define() aligned in columns
    cases += _each("quoted-user-password", _generated, ["curl -su deploy:'{s}' https://ci.example.org/api/json"])
    cases += _each("login-arguments", _generated, [
        "#0 /srv/app/src/Db.php(31): PDO->__construct('pgsql:host=db;...', 'app', '{s}')",
        "$link = new mysqli('localhost', 'wp', '{s}', 'wordpress');",
        'Connection c = DriverManager.getConnection(jdbcUrl, "sa", "{s}");'])
    cases += _each("key-random-base64", lambda: _j(_r(ALNUM + "+/", 43), "="), [
        '"Jwt": {{\n    "Issuer": "https://auth.example.org",\n    "Key": "{s}"\n  }}', 'encrypt = "{s}"'])
    cases += _each("define-aligned", lambda: _j(_generated(), "{[&%"), ["define( 'LOGGED_IN_SALT',     '{s}' );"])
    # a fourth round (the tenth blind set): Redis, Terraform state, Perl's DBI, a Rails master key, a setting said to
    # be set to a value, 1Password's CLI, a login / password pair, a wallet's recovery phrase
    cases += _each("redis-password", _generated, ["port 6379\nrequirepass {s}\nmaxmemory 2gb",
                                                  '127.0.0.1:6379> CONFIG GET requirepass\n1) "requirepass"\n2) "{s}"'])
    cases += _each("terraform-state", _generated, ['{{"type": "random_password", "name": "db", "instances": [{{'
                                                   '"attributes": {{"length": 24, "result": "{s}"}}}}]}}'])
    cases += _each("login-arguments", _generated, ["my $dbh = DBI->connect($dsn, 'app_rw', '{s}', {{ RaiseError => 1 }});"])
    cases += _each("rails-master-key", lambda: _r(HEX, 32), ["$ cat config/master.key\n{s}\n$ bin/rails s"])
    cases += _each("set-to", _generated, ["I've set `DB_PASSWORD` in `.env` to `{s}` and restarted the api.",
                                          "then set STRIPE_SECRET_KEY to {s} in the dashboard"])
    cases += _each("next-line", _generated, ['$ op item get "Prod DB" --fields password --reveal\n{s}'])
    cases += _each("login-slash-password", lambda: _j(_generated()[:10], "#7"), [
        "use admin / {s} for the staging grafana", "Okta test user: qa.user1 / {s} (MFA off)"])
    words = ["veteran", "round", "ability", "roof", "abstract", "version", "again", "about", "canyon", "lemon"]
    cases += _each("recovery-phrase", lambda: " ".join(_RNG.choice(words) for _ in range(12)),
                   ["wallet seed for the testnet bot (don't lose it):\n{s}\n"])
    cases += _each("app-password", lambda: " ".join(_r(LOWER, 4) for _ in range(4)),
                   ["gmail app password is {s} - use it in the SMTP settings"])
    return cases


#: Text beside the forms of :func:`more_forms_cases` that holds no secret: none may be redacted.
MORE_FORMS_LOOKALIKES = [
    "  password = random_password.db.result", 'production:\n  password: <%= ENV["DATABASE_PASSWORD"] %>',
    "  -p, --password TEXT   Password for the database (prompted if omitted)",
    "Memory address 0x7ffd5e8c1a20, MAC 3c:22:fb:9a:1e:07", 'credentials "app.terraform.io" {',
    "Secret access key: (shown once)", "fetch(url, { headers: { 'x-api-key': API_KEY } });",
    '$cred = New-Object PSCredential("ACME\\svc", $secure)', "backup codes: none generated yet",
    "key: this will work fine", "şifre sıfırlama bağlantısı gönderildi", "şifreniz en az 8 karakter olmalı",
    "הסיסמה שגויה", "كلمة المرور غير صحيحة", "token hai nahi abhi", "Пароль: неверный", "Das Passwort ist falsch",
    "Token:\n----", "Password:\nchange it on first login", "the password was changed to expire in 30 days",
    "order 4000 1234 5678 9011 shipped", "call 0800 123 4567 for support", "ISBN 978-3-16-148410-0",
    "client = OpenAI(api_key=api_key)", "STRIPE_SECRET_KEY=sk_test_...\nSTRIPE_WEBHOOK_SECRET=whsec_...",
    "OPENAI_API_KEY=sk-...Wx3Q", "password = dbPassword", "zeros: " + "A" * 300,
    "पासवर्ड है नहीं", "पासवर्ड भूल गए?", "пароль 8 символов минимум", "пароль от 8 символов", "رمز عبور را فراموش کردم",
    "รหัสผ่านคือสิ่งสำคัญ", "la carte 4 fois", "order card 1234567890123", "Mot de passe : c'est quoi ?",
    "vault login -method=oidc", "accounts: []", " -u, --user <user:password> Server user and password",
    "GITHUB_TOKEN=op://Engineering/GitHub CI/token", "password: !ENV ${SMTP_PASSWORD}", "Password: •••••••••• (hidden)",
    "password: !vault |",
    # the ninth blind set's look-alikes: test reports, package versions, calls and cmdlets that read a secret, names
    # of secrets, masks, a fetch option, a certificate's key identifier, a key that is a hash
    "--- PASS: TestRefreshAccessToken (0.01s)", "    --- PASS: TestHashPassword/bcrypt (0.30s)",
    'jsonwebtoken: "npm:^9.0.2"', '"passport-jwt-token": "~4.0.1"',
    'let password = rpassword::prompt_password("Vault password: ")?;',
    "$env:DB_PASSWORD = (Get-Secret -Name ProdDb -AsPlainText)",
    "WARNING! Using --password via the CLI is insecure. Use --password-stdin.", '<add key="SmtpPassword" value="" />',
    "We hash passwords with scrypt (N=32768, r=8, p=1) before storing them.",
    'fetch("/api/session", { method: "POST", credentials: "same-origin" })', 'token_env = "GITHUB_TOKEN"',
    "X509v3 Subject Key Identifier:\n    5C:9A:0B:11:7E:42:D3:AA:19:6C:F0:2E:88:41:B7:03:6D:25:EE:90",
    'password: "[FILTERED]"', "GITHUB_TOKEN=ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX", "STRIPE_KEY=sk_live_xxxxxxxxxxxxxxxx",
    "services:\n  api:\n    secrets:\n      - api_token\n      - registry-credentials\nsecrets:\n  api_token:\n"
    "    file: ./secrets/api_token.txt\n  registry-credentials:\n    external: true",
    "kind: Secret\nstringData:\n  password: {{ .Values.db.password | quote }}",
    '"key": "8f14e45fceea167a5a36dedd4bea2543"', '"key": "AAAAC3NzaC1lZDI1NTE5AAAAIBv1nqK0c9hTgQ4yWf2sX7mD3rLp8eZa"',
    # the tenth blind set's look-alikes: Rust paths, a non-null assertion, an ARN, a flag after a flag, a shell's
    # error for an unset variable, a key compared, a Rails task, log lines, a masked index password
    "test auth::tests::rejects_bad_signature ... ok", "   2: api::auth::jwt::verify",
    "  secret: process.env.SESSION_SECRET!,", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/orders/db-Ab12Cd",
    "$ gpg --list-secret-keys --keyid-format=long",
    "POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD in .env}", "if (e.key === 'Escape') closeModal();",
    "$ bin/rails credentials:edit", "WARN  auth: invalid password attempt for user 'jdoe' (attempt 3/5)",
    "failed to fetch oauth token: unexpected status: 401 Unauthorized",
    'INFO: Password reset requested {"user_id":1182,"ip":"198.51.100.7"}',
    "Restored cache from key: deps-linux-030cec84deac0581f09f4d62fbb051c14132b84790bbf2b82b3008c897f73ca1",
    "Looking in indexes: https://pypi.org/simple, https://__token__:****@pkgs.example.org/simple",
    'plain := "ak_" + base64.RawURLEncoding.EncodeToString(key)', "root / admin can open the settings page",
    "random seed for the test run: 12345", "seed: 42", "the app password is invalid, generate a new one",
]


def table_cases() -> list[tuple[str, str, str]]:
    """Secrets in a table whose header names their column: CSV, TSV, Markdown, psql output, SQL INSERT."""
    tables = [
        ("csv-column", "username,password,role\nbob,{s},admin\n"),
        ("csv-column", "id;email;api_key\n7;ops@example.com;\"{s}\"\n"),
        ("csv-column", "service\tclient id\tclient secret\nstripe\tca_12345\t{s}\n"),
        ("markdown-table", "| user | password |\n|------|----------|\n| bob | `{s}` |\n"),
        ("psql-output", " id | username | password\n----+----------+----------\n  1 | bob      | {s}\n(1 row)\n"),
        ("sql-insert", "INSERT INTO users (name, password) VALUES ('bob', '{s}');"),
        ("sql-insert", "insert into `api_keys` (`id`, `token`) values (1, 'placeholder'), (2, '{s}');"),
        ("name-value-table", "| Setting | Value |\n|---|---|\n| DB password | {s} |\n| host | db.internal |\n"),
    ]
    return [case for fmt, context in tables for case in _each(fmt, _password, [context])]


def vendor_prefix_cases() -> list[tuple[str, str, str]]:
    """Vendor tokens with a published prefix and shape that no rule knew (rt4-a sections A and B), met bare in a log
    line, in an env assignment whose name says nothing and in JSON (format, text, secret)."""
    uuid = lambda: "-".join(_r(HEX, n) for n in (8, 4, 4, 4, 12))  # noqa: E731
    mixed = lambda n: _j(_r(UPPER, 1), _r(LOWER, 1), _r(DIGITS, 1), _r(ALNUM, n - 3))  # noqa: E731
    upper_digits = UPPER + DIGITS
    formats: list[tuple[str, Callable[[], str]]] = [
        ("adobe", lambda: _j("p8", "e-", _r(LOWER + DIGITS, 32))),
        ("1password-secret-key", lambda: _j("A", "3-", _r(upper_digits, 6), "-", _r(upper_digits, 11), "-",
                                            _r(upper_digits, 5), "-", _r(upper_digits, 5), "-", _r(upper_digits, 5))),
        ("clickhouse-cloud", lambda: _j("4b", "1d", mixed(38))),
        ("defined-networking", lambda: _j("dn", "key-", _r(LOWER + DIGITS, 26), "-", _r(LOWER + DIGITS, 52))),
        ("duffel", lambda: _j("duffel", "_live_", _r(URLSAFE, 43))),
        ("frameio", lambda: _j("fio", "-u-", _r(URLSAFE, 64))),
        ("infracost", lambda: _j("ic", "o-", _r(ALNUM, 32))),
        ("intra42", lambda: _j("s-s4", "t2ud-", _r(HEX, 64))),
        ("maxmind", lambda: _j(_r(ALNUM, 6), "_", _r(ALNUM, 29), "_m", "mk")),
        ("octopus", lambda: _j("AP", "I-", _r(UPPER, 1), _r(DIGITS, 1), _r(upper_digits, 24))),
        ("openshift", lambda: _j("sha256", "~", _r(URLSAFE, 43))),
        ("readme", lambda: _j("rd", "me_", _r(LOWER + DIGITS, 70))),
        ("scalingo", lambda: _j("tk", "-us-", _r(URLSAFE, 48))),
        ("settlemint", lambda: _j("sm", "_pat_", mixed(16))),
        ("square", lambda: _j("EA", "AA", _r(URLSAFE, 60))),
        ("typeform", lambda: _j("tf", "p_", _r(LOWER + DIGITS + "_-", 59))),
        ("yandex-api-key", lambda: _j("AQ", "VN", _r(URLSAFE, 36))),
        ("lob", lambda: _j("li", "ve_", _r(HEX, 35))),
        ("plaid", lambda: _j("access", "-production-", uuid())),
        ("hubspot", lambda: _j("pat", "-na1-", uuid())),
        ("bitbucket", lambda: _j("AT", "BB", _r(ALNUM, 32))),
        ("atlassian-ctt", lambda: _j("ATCTT3", "xFfGN0", _r(URLSAFE, 180), "=", _r(HEX, 8))),
        ("circleci", lambda: _j("CCI", "PAT_", _r(ALNUM, 22), "_", _r(HEX, 40))),
        ("tencent", lambda: _j("AK", "ID", _r(ALNUM, 32))),
        ("backblaze", lambda: _j("K0", "05", mixed(27))),
        ("google-refresh", lambda: _j("1/", "/0", _r(URLSAFE, 100))),
        ("twitch", lambda: _j("oauth", ":", _r(LOWER, 1), _r(DIGITS, 1), _r(LOWER + DIGITS, 28))),
        ("riot", lambda: _j("RG", "API-", uuid())),
        ("lichess", lambda: _j("li", "p_", mixed(20))),
        ("crates-io", lambda: _j("ci", "o", mixed(32))),
        ("rancher", lambda: _j("tok", "en-", _r(LOWER + DIGITS, 5), ":", _r(LOWER + DIGITS, 54))),
        ("launchdarkly", lambda: _j("sd", "k-", uuid())),
        ("statsig", lambda: _j("sec", "ret-", mixed(43))),
        ("tavily", lambda: _j("tv", "ly-", _r(ALNUM, 32))),
        ("tavily-dev", lambda: _j("tv", "ly-dev-", _r(ALNUM, 32))),
        ("cerebras", lambda: _j("cs", "k-", _r(LOWER + DIGITS, 48))),
        ("firecrawl", lambda: _j("f", "c-", _r(HEX, 32))),
        ("voyage", lambda: _j("p", "a-", mixed(43))),
        ("modal", lambda: _j("a", "s-", mixed(22))),
        ("fireworks", lambda: _j("f", "w_", mixed(24))),
        ("supabase-secret", lambda: _j("sb", "_secret_", _r(URLSAFE, 31))),
        ("infisical", lambda: _j("s", "t.", uuid(), ".", _r(HEX, 32), ".", _r(HEX, 32))),
        ("sanity", lambda: _j("s", "k", mixed(180))),
        ("portainer", lambda: _j("pt", "r_", _r(ALNUM + "+/", 43), "=")),
        ("mailersend", lambda: _j("ml", "sn.", _r(HEX, 64))),
        ("instagram", lambda: _j("IG", "QV", _r(URLSAFE, 160))),
        ("checkout-sandbox", lambda: _j("sk", "_sbox_", _r(LOWER + DIGITS, 26))),
        ("checkout-uuid", lambda: _j("sk", "_test_", uuid())),
        ("clickup", lambda: _j("p", "k_", _r(DIGITS, 8), "_", _r(upper_digits, 32))),
        ("dbt-cloud", lambda: _j("db", "tc_", _r(URLSAFE, 56))),
        ("digitalocean-spaces", lambda: _j("DO", "00", _r(upper_digits, 16))),
        ("firebase-fcm", lambda: _j("AA", "AA", _r(URLSAFE, 7), ":APA", "91b", _r(URLSAFE, 134))),
        ("salesforce-session", lambda: _j("00", "D", _r(ALNUM, 12), "!", _r(ALNUM + ".", 96))),
        ("harness", lambda: _j("pa", "t.", _r(URLSAFE, 22), ".", _r(ALNUM, 24), ".", _r(ALNUM, 20))),
        ("authress", lambda: _j("s", "c_", _r(LOWER + DIGITS, 10), ".", _r(LOWER + DIGITS, 5), ".acc_",
                                _r(LOWER + DIGITS, 20), ".", _r(URLSAFE, 60))),
        ("testpypi", lambda: _j("py", "pi-", "AgENdGVzdC5weXBpLm9yZw", _r(URLSAFE, 70))),
        ("gitlab-routable", lambda: _j("gl", "pat-", _r(URLSAFE, 27), ".01", _r(LOWER + DIGITS, 7))),
        # bodies the generic prefix_random rule refused: hex or lower-case only
        ("sonarqube", lambda: _j("sq", "u_", _r(HEX, 40))),
        ("sonarqube-project", lambda: _j("sq", "p_", _r(HEX, 40))),
        ("woocommerce", lambda: _j("c", "s_", _r(HEX, 40))),
        ("e2b", lambda: _j("e2", "b_", _r(HEX, 40))),
        ("neon", lambda: _j("na", "pi_", _r(LOWER + DIGITS, 64))),
        ("linear-oauth", lambda: _j("lin", "_oauth_", _r(HEX, 64))),
        ("honeycomb", lambda: _j("hca", "ik_01", _r(LOWER + DIGITS, 56))),
        ("elevenlabs", lambda: _j("s", "k_", _r(HEX, 48))),
        ("klaviyo", lambda: _j("p", "k_", _r(HEX, 34))),
        # the generic form with a hyphen
        ("prefix-hyphen-random", lambda: _j(_r(LOWER, 4), "-", mixed(36))),
    ]
    contexts = ["2024-05-01T10:22:11Z INFO client initialised with {s} (region eu-west-1)", "export ACME_CFG={s}",
                '{{"client": {{"region": "eu", "value": "{s}"}}}}']
    return [case for name, make in formats for case in _each(f"vendor-{name}", make, contexts)]


#: Prose in other languages that names a secret but holds none: none of it may be redacted.
OTHER_LANGUAGE_LOOKALIKES = [
    "пароль: неверный", "Пароль должен содержать 8 символов", "Das Passwort ist falsch",
    "Das Passwort ist mindestens 12 Zeichen lang", "密码是多少？", "请输入密码：", "パスワードを忘れた",
    "パスワードは8文字以上です", "la contraseña es incorrecta", "mot de passe oublié : cliquez ici",
    "la password è scaduta", "a senha é obrigatória", "비밀번호를 잊으셨나요?", "пароль от сервера лежит в 1Password",
    "la clave es única", "токен истёк — обновите его", "ключ: значение", "ключ: config.api_key",
    "ключ API хранится в переменной окружения", "пароль: $DB_PASSWORD", "密码：${DB_PASSWORD}", "contraseña: ****",
    "Passwort: <dein-passwort>", "la clave es 42", "密码长度为8位", "パスワードは英数字8文字以上",
    "токен: ./secrets/token.txt", "the password is incorrect", "the password is PostgreSQL",
    "the token is XMLHttpRequest", "The password for the db is stored in Vault",
    "clé primaire: id", "Schlüssel: Wert", "Schlüssel: user_id", "la chiave è sbagliata", "clé API : <votre-clé>",
    "jeton: null", "le jeton est invalide", "APIキーを設定してください", "API 키를 입력하세요",
    "Changed the password policy on 2024-05-01", "Moved password storage to vault2", "password hashing to bcrypt2",
    # found by running the rules over the shared bench data: a command named in prose, Italian "parola" (word)
    "you can use the net user command. The basic syntax is:\n\nnet user [username] [password] /add",
    'page.login("Sign in", "Submit")', "server.login(user, password)", "jwt.decode(token, key, algorithms=['HS256'])",
    "hmac.new(key, body, hashlib.sha256)", "Fernet(key)", "AUTH required", "AUTH is handled by the gateway",
    "net user <username> <password> /add", 'Ottimo, la parola è "domenica".',
    # a secret word, then a name or a value that is no secret within the sentence
    "send the token to jane.doe2@acme.io", "the key path is ~/.ssh/id_ed25519", "the token is parsed by TokenParser2.parse",
    "the secret lives in config/secrets_v2.yaml", "token for OAuth2Client and the rest", "primary key (id, createdAt2)",
    "rotate the key, see https://wiki.example.com/Keys#Rotate2", "the key binding is Ctrl+Shift+P2",
    "key: value pairs such as retries=3&timeout=30s", "keys are rotated by KeyRotatorV2.run()",
    "token budget: maxTokens=4096*2", "the secret scanner flagged src/auth/TokenStore2.java",
    "Token ids like gpt-4o-mini-2024-07-18 are model names", "the password expires with release-2024-v2",
    "das Token wird von OAuth2ClientCredentialsProvider erzeugt", "the token is generated by KeyVaultHelper.loadKeyPair256",
    "password check happens in ApiKeyMiddleware4Http.process_request",
    "the token bug was fixed in commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39",
    "key file sha256 is 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "Version 2.0.0-beta+exp.sha.5114f85 of the token library", "Fixed OAuth2ClientCredentialsProvider so the token refreshes",
    "xK9!abcdefgh pressed on the keyboard",
    # placeholders, the rest of an address, a range of characters (a third blind probe, rt5)
    "Passwort: YOUR_API_KEY_HERE", "Passwort: <insert key>", "hasło: your-token-here",
    "troque a senha em https://acme-corp.io/account/password-reset?lang=en",
    "пароль должен содержать 10 символов: A-Z, a-z, 0-9", "app.secret_key = 'replace_this_with_a_real_secret_key'",
    "const accessToken = 'your-access-token';",
    # the secret words of bracketed_cases with no secret after them, and what prose says after a secret word
    "Het wachtwoord staat in de kluis (1Password).", "Lösenordet måste vara minst 12 tecken (ProTip: use a phrase)",
    "Nové heslo je v trezoru", "Zmieniłem hasło wczoraj (HasłoAdmina w sejfie)", "le credenziali sono in Vault",
    "paramètres du jeton : max_age=900", "la touche pour afficher le mot de passe : Ctrl+Shift+Esc",
    "Tastenkürzel zum Anzeigen des Passworts: Cmd+Option+P",
    "сбросить пароль можно тут: https://acme-corp.io/docs/api-keys#rotation",
    'токен читается так: `password = getpass.getpass("Password: ")`',
    "el ID de la clave es 7fd5a5e3-19ef-46c8-982b-4db2b9f3f067",
]

#: Tables and lists that name a secret column but hold no secret, or are no table: none may be redacted.
TABLE_LOOKALIKES = [
    "We store the email, password\nThen, we hash it\n", "id,password_hash\n1,abc\n", "token_count,latency\n12,3.4\n",
    "fields: user, password\nsee docs, later\n", "| Option | Description |\n|---|---|\n| --password | the password |\n",
    "user,password\nbob,NULL\namy,$DB_PASSWORD\n", "INSERT INTO users (name, password_hash) VALUES ('bob', 'x1y2z3w4');",
    "INSERT INTO users (name, password) VALUES ('bob', NULL), ('amy', '********');",
    "| --password | string |", "| api key | see vault |", "| API_KEY | settings.API_KEY |",
]

#: Code, commands and prose near a secret word that hold no secret: none may be redacted.
CODE_LOOKALIKES = [
    "String password = new String(chars);", "const secret = new TextEncoder().encode(process.env.SECRET);",
    "Authorization: 'Basic ' + btoa(user + ':' + pass)", 'token = request.headers.get("Authorization")',
    'secret = os.environ["SECRET_KEY_V2"]', "password = hash_password(user.name)", "ssh -l deploy -p 2222 host",
    "docker run -u 1000 -p 8080:80 app", "git diff -u -p src/app2.py", "I set the password to expire in 30 days",
    "the token is now invalid", "reset the password to the default", "api_key = os.getenv('OPENAI_API_KEY')",
    'parser.add_argument("--token", default=None)', "max_tokens: 4096", '"input_tokens": 1234',
    "random_seed = 42", "gh auth token | pbcopy", "op read op://prod/db/password > /dev/null",
    "conn = pymysql.connect('db.internal', 'root', password, 'app')", "ftp = FTP('ftp2.example.com')",
    '{"name": "db_password", "type": "string", "description": "the value is set in vault"}',
    "https://example.com/search?code=200&sid=abc", '"Name": "/prod/db/password", "Type": "SecureString"',
    "password = (sensitive value)", "token: gho_************************abcd", "const value = E.target.value",
    "Pin to python3.11 in CI", "spin to v1.2.3-beta", '{"name": "token_type", "value": "bearer"}',
    '{"labels": ["token-usage", "billing"], "value": "12.5 USD"}', "kubectl logs -l app=api -p --tail=100",
    "git log -l 5 -p HEAD~3..HEAD", "session_tokens = 4096", "master_seed = 12345", "TF_TOKEN_EXPIRY=2024-01-01T00:00",
    "AWS account: 123456789012 / us-east-1", "the secret `GITHUB_TOKEN2`",
    "aws ssm put-parameter --name /app/log_level --value debug_v2 --type String",
    'mysql -u app --password="$DB_PASS" shop <<< "SHOW TABLES"',
    "MTIzNDU2Nzg5MGFiY2RlZmdo.abcdef.e0tza93Ce6KRDiKpFfez3gb9pvMEc0", "uuid 123e4567-e89b-12d3-a456-426614174000",
    "aws ssm get-parameter --name /prod/db/password --with-decryption",
]

#: A key word, a space and an identifier that is no secret (a public key's id or fingerprint, a database key):
#: none may be redacted.
SPACE_VALUE_LOOKALIKES = [
    "gpg key 3AA5C34371567BD2", "imported GPG key 4AEE18F83AFDEB23 from keyserver",
    "ssh key SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8", "host key ECDSA SHA256:p2QAMXNIC1TJYWeIOttrVc98",
    "primary key user_id_2024", "the cache key v2-deps-3f2a9c1d", "foreign key fk_orders_users1",
    "the api key settings.DATADOG_KEY", "access token ${{ secrets.TOKEN }}", "the API key ~/.config/dd/key2024",
    # a login word, a user and a slash: a path or a pair of plain words, no password
    "login / logout", "logged in as org/project-2024", "see the login with user/repo", "login admin/admin",
    "sign in / sign up flows", "credentials / secrets manager v2",
]


def _lookalikes() -> list[str]:
    words = [
        "max_tokens=4096", "token_count = len(tokens)", "--token-file ~/.config/gh/token", "secret_name: db-creds",
        "password_hash = bcrypt.hashpw(pw, salt)", "Authorization: Bearer $TOKEN", "tokenizer = AutoTokenizer()",
        "the author = bob", "password_min_length = 12", "api_key_header = 'X-API-Key'", "key = 'value'",
        "export GITHUB_TOKEN=$(gh auth token)", "token: string", "password: str", "password = getpass.getpass()",
        "SECRET_KEY = os.environ['SECRET_KEY']", "api_key = settings.OPENAI_API_KEY", "token = None",
        "password: ${DB_PASSWORD}", "apiKey: process.env.API_KEY", "--password-stdin", "docker login -u ci --password-stdin",
        "git commit -m 'rotate tokens'", "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39", "uuid 123e4567-e89b-12d3-a456-426614174000",
        "Bearer authentication is described in RFC 6750", "the skeleton key of the design", "passing tests: 42",
        "keyboard = Keyboard()", "monkeypatch.setenv('TOKEN', 'x')", "if password is None: raise", "pass",
        "sk-learn is not a package name", "ghp is short", "AKIA in prose", "xoxb- alone",
        "https://example.com/path?page=2", "http://localhost:8080/api", "ssh git@github.com",
        "postgres://localhost/app", "mysql -u root -p app", "curl -u admin https://x", "user@example.com",
        "Credential helper: osxkeychain", "auth: true", "token_type: bearer", "token_url = 'https://oauth/token'",
        "access_token_expiry = 3600", "tokens.append(tok)", "password reset flow", "secrets.token_hex(16)",
        "private_key_path = '~/.ssh/id_ed25519'", "BEGIN TRANSACTION;", "-----BEGIN CERTIFICATE-----",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB public key", "const key = event.key;", "dict.get(key, default)",
        "passwd -l bob", "auth_method = 'oauth'", "credentials_path = './creds.json'", "pk_test is a publishable prefix",
        "sig = inspect.signature(fn)", "x-request-id: 7f3c", "SEED=1234", "version: 2.1.330",
        '{"kind": "Secret", "metadata": {"name": "db-creds"}}', '{"type": "password", "label": "Your password"}',
        # near the vendor prefixes of vendor_prefix_cases: identifiers, hashes and ids, no token
        "git checkout feature-AddUserProfilePageWithSettings", "cache key pip-3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39",
        "def test_user_can_update_profile_settings_page():", "x-request-id: req-123e4567-e89b-12d3-a456-426614174000",
        "oauth: disabled", "the sk_ prefix is secret, pk_ is public", "tvly-dev is the Tavily dev prefix",
        "sha256~ marks an OpenShift token", "build-7f3c9a2e1b4d6f8a0c2e4b6d8f0a2c4e",
        # the secret words of bracketed_cases, with no secret after them
        "pwd /home/dev/projects/ccmemory", "the password (see the team vault) was rotated on Monday",
        "the signing key is read from settings.py and the algorithms= option stays at HS256",
        # hexadecimal beside a secret word that is a hash or a commit, or a secret word in a file name
        "9f86d081884c7d659a2feaa0c55ad015 is the md5 of the token file",
        "Commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 rotated the token handling",
        "sha256 E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855 is what the key file hashes to",
        "git show 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 -- src/token.py",
        "git diff 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d..HEAD -- auth/token_store.py",
        "password hashing module version: v9.8.17",
    ]
    return words


_EARLIER = _cases()
#: The forms of issue 19 (secrets that reached the database through the capture hook), part of SECRETS.
ISSUE19 = issue19_cases()
#: The families of the red-team pass (issue 25's re-measure), part of SECRETS.
REDTEAM = redteam_cases()
#: Code, commands and prose of the fourth red-team pass, part of SECRETS.
CODE = code_and_command_cases()
#: Secrets said in prose in other languages, and the forms found beside them, part of SECRETS.
PROSE = prose_cases()
#: Secrets in tables whose header names their column, part of SECRETS.
TABLES = table_cases()
#: Vendor tokens with a published prefix that no rule knew (rt4-a), part of SECRETS.
VENDOR_PREFIXES = vendor_prefix_cases()
WINDOW = window_cases()
LOOKALIKES = _lookalikes()
#: Secrets in brackets after their secret word, and the secret words of more languages, part of SECRETS.
BRACKETED = bracketed_cases()
#: Values in other letters, compounds, values on the next line, one-time codes and card numbers, part of SECRETS.
MORE_FORMS = more_forms_cases()
SECRETS = _EARLIER + ISSUE19 + REDTEAM + CODE + PROSE + TABLES + VENDOR_PREFIXES + WINDOW + BRACKETED + MORE_FORMS
FORMATS = sorted({fmt for fmt, _, _ in SECRETS})


def chunks(texts: list[str], limit: int) -> list[str]:
    """Texts joined by newlines into pieces of at most ``limit`` characters (one text may stand alone)."""
    pieces, current = [], ""
    for text in texts:
        if current and len(current) + 1 + len(text) > limit:
            pieces.append(current)
            current = ""
        current = f"{current}\n{text}" if current else text
    if current:
        pieces.append(current)
    return pieces
