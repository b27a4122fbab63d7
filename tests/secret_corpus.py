"""A generated corpus of secrets and near-misses, for tests/test_secrets.py and bench/secrets.py.

No realistic secret is written down anywhere: each shape is a template plus a
seeded random generator producing strings in the provider's real format, put
in the contexts people paste them in (.env lines, JSON, YAML, shell, code,
prose). Negative samples are near-misses that must come back unchanged.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote

B62 = string.ascii_letters + string.digits
B64 = B62 + "+/"
B64URL = B62 + "-_"
HEX = "0123456789abcdef"
UPPER_DIGITS = string.ascii_uppercase + string.digits
BASE32 = string.ascii_uppercase + "234567"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
PASSWORD_CHARS = B62 + "!#%^*-_+=.~"


@dataclass(frozen=True)
class Sample:
    """One secret in context. `secrets` must vanish from the redacted text, `keep` must stay."""

    shape: str
    text: str
    secrets: tuple[str, ...]
    keep: tuple[str, ...] = ()
    code: bool = True  # machine-made: mask_code must catch it too
    extra: dict = field(default_factory=dict)


class Gen:
    """Random strings in provider formats, from one seeded RNG."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def s(self, alphabet: str, n: int) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def digits(self, n: int) -> str:
        return str(self.rng.randint(1, 9)) + self.s(string.digits, n - 1)

    def letters(self, lo: int, hi: int) -> str:
        return self.s(string.ascii_lowercase, self.rng.randint(lo, hi))

    def password(self, lo: int = 10, hi: int = 20) -> str:
        n = self.rng.randint(lo, hi)
        body = self.s(PASSWORD_CHARS, n - 3)
        return self.rng.choice(string.ascii_letters) + body + self.rng.choice(string.digits) + "x"

    def b64(self, nbytes: int, urlsafe: bool = False) -> str:
        raw = self.rng.randbytes(nbytes)
        return (base64.urlsafe_b64encode(raw) if urlsafe else base64.b64encode(raw)).decode()

    def uuid(self) -> str:
        return str(uuid.UUID(bytes=self.rng.randbytes(16), version=4))

    def pick(self, items):
        return self.rng.choice(items)

    def jwt(self) -> str:
        header = {"alg": self.pick(["HS256", "RS256", "ES256"]), "typ": "JWT"}
        payload = {
            "sub": self.digits(10),
            "name": self.letters(4, 9),
            "iat": self.rng.randint(10**9, 2 * 10**9),
        }

        def part(obj: dict) -> str:
            return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

        return f"{part(header)}.{part(payload)}.{self.b64(32, urlsafe=True).rstrip('=')}"

    def pem_body(self, nbytes: int) -> list[str]:
        body = self.b64(nbytes)
        return [body[i : i + 64] for i in range(0, len(body), 64)]


# --- token shapes: (shape, environment variable name, generator) ----------------------

TokenShape = tuple[str, str, Callable[[Gen], str]]

TOKEN_SHAPES: list[TokenShape] = [
    (
        "openai-project-key",
        "OPENAI_API_KEY",
        lambda g: "sk-proj-" + g.s(B64URL, 74) + "T3BlbkFJ" + g.s(B64URL, 74),
    ),
    ("openai-legacy-key", "OPENAI_API_KEY", lambda g: "sk-" + g.s(B62, 20) + "T3BlbkFJ" + g.s(B62, 20)),
    ("anthropic-key", "ANTHROPIC_API_KEY", lambda g: "sk-ant-api03-" + g.s(B64URL, 93) + "AA"),
    ("openrouter-key", "OPENROUTER_API_KEY", lambda g: "sk-or-v1-" + g.s(HEX, 64)),
    ("groq-key", "GROQ_API_KEY", lambda g: "gsk_" + g.s(B62, 52)),
    ("huggingface-token", "HF_TOKEN", lambda g: "hf_" + g.s(string.ascii_letters, 34)),
    ("aws-access-key-id", "AWS_ACCESS_KEY_ID", lambda g: g.pick(["AKIA", "ASIA"]) + g.s(BASE32, 16)),
    ("github-pat", "GITHUB_TOKEN", lambda g: "ghp_" + g.s(B62, 36)),
    ("github-app-token", "GH_TOKEN", lambda g: g.pick(["gho_", "ghs_", "ghu_", "ghr_"]) + g.s(B62, 36)),
    ("github-fine-grained-pat", "GITHUB_PAT", lambda g: "github_pat_" + g.s(B62, 22) + "_" + g.s(B62, 59)),
    ("gitlab-token", "GITLAB_TOKEN", lambda g: g.pick(["glpat-", "glrt-", "gldt-"]) + g.s(B64URL, 20)),
    ("google-api-key", "GOOGLE_API_KEY", lambda g: "AIza" + g.s(B64URL, 35)),
    ("google-oauth-secret", "GOOGLE_CLIENT_SECRET", lambda g: "GOCSPX-" + g.s(B64URL, 28)),
    ("slack-bot-token", "SLACK_BOT_TOKEN", lambda g: f"xoxb-{g.digits(12)}-{g.digits(13)}-{g.s(B62, 24)}"),
    (
        "slack-user-token",
        "SLACK_TOKEN",
        lambda g: f"xoxp-{g.digits(12)}-{g.digits(12)}-{g.digits(13)}-{g.s(HEX, 32)}",
    ),
    (
        "stripe-secret-key",
        "STRIPE_SECRET_KEY",
        lambda g: g.pick(["sk_live_", "rk_live_"]) + g.s(B62, g.pick([24, 99])),
    ),
    ("stripe-webhook-secret", "STRIPE_WEBHOOK_SECRET", lambda g: "whsec_" + g.s(B62, 32)),
    ("jwt", "ID_TOKEN", lambda g: g.jwt()),
    ("sendgrid-key", "SENDGRID_API_KEY", lambda g: f"SG.{g.s(B64URL, 22)}.{g.s(B64URL, 43)}"),
    ("twilio-api-key", "TWILIO_API_KEY", lambda g: "SK" + g.s(HEX, 32)),
    ("pypi-token", "TWINE_PASSWORD", lambda g: "pypi-AgEIcHlwaS5vcmc" + g.s(B64URL, g.rng.randint(120, 180))),
    ("npm-token", "NPM_TOKEN", lambda g: "npm_" + g.s(B62, 36)),
    (
        "shopify-token",
        "SHOPIFY_ACCESS_TOKEN",
        lambda g: g.pick(["shpat_", "shpss_", "shpca_", "shppa_"]) + g.s(HEX, 32),
    ),
    ("digitalocean-token", "DIGITALOCEAN_TOKEN", lambda g: g.pick(["dop_v1_", "doo_v1_"]) + g.s(HEX, 64)),
    ("heroku-api-key", "HEROKU_API_KEY", lambda g: "HRKU-AA" + g.s(B64URL, 58)),
    ("mailgun-key", "MAILGUN_API_KEY", lambda g: "key-" + g.s(HEX, 32)),
    ("mailchimp-key", "MAILCHIMP_API_KEY", lambda g: g.s(HEX, 32) + "-us" + str(g.rng.randint(1, 21))),
    (
        "square-token",
        "SQUARE_ACCESS_TOKEN",
        lambda g: g.pick(["sq0atp-" + g.s(B64URL, 22), "EAAA" + g.s(B64URL, 60)]),
    ),
    ("square-oauth-secret", "SQUARE_OAUTH_SECRET", lambda g: "sq0csp-" + g.s(B64URL, 43)),
    (
        "discord-bot-token",
        "DISCORD_BOT_TOKEN",
        lambda g: (
            base64.b64encode(g.digits(18).encode()).decode().rstrip("=")
            + "."
            + g.s(B64URL, 6)
            + "."
            + g.s(B64URL, 38)
        ),
    ),
    ("telegram-bot-token", "TELEGRAM_BOT_TOKEN", lambda g: f"{g.digits(10)}:AA{g.s(B64URL, 33)}"),
    ("new-relic-user-key", "NEW_RELIC_API_KEY", lambda g: "NRAK-" + g.s(UPPER_DIGITS, 27)),
    ("new-relic-license-key", "NEW_RELIC_LICENSE_KEY", lambda g: g.s(HEX, 36) + "NRAL"),
    ("sentry-user-token", "SENTRY_AUTH_TOKEN", lambda g: "sntryu_" + g.s(HEX, 64)),
    (
        "atlassian-token",
        "JIRA_API_TOKEN",
        lambda g: "ATATT3xFfGF0" + g.s(B64URL, 180) + "=" + g.s(HEX, 8).upper(),
    ),
    ("linear-key", "LINEAR_API_KEY", lambda g: "lin_api_" + g.s(B62, 40)),
    (
        "notion-token",
        "NOTION_TOKEN",
        lambda g: g.pick(["ntn_" + g.digits(11) + g.s(B62, 35), "secret_" + g.s(B62, 43)]),
    ),
    ("postman-key", "POSTMAN_API_KEY", lambda g: f"PMAK-{g.s(HEX, 24)}-{g.s(HEX, 34)}"),
    ("databricks-token", "DATABRICKS_TOKEN", lambda g: "dapi" + g.s(HEX, 32) + g.pick(["", "-2"])),
    ("vault-token", "VAULT_TOKEN", lambda g: "hvs." + g.s(B64URL, 92)),
    ("age-secret-key", "SOPS_AGE_KEY", lambda g: "AGE-SECRET-KEY-1" + g.s(BECH32, 58)),
    ("grafana-token", "GRAFANA_TOKEN", lambda g: f"glsa_{g.s(B62, 32)}_{g.s(HEX, 8)}"),
    ("doppler-token", "DOPPLER_TOKEN", lambda g: "dp.pt." + g.s(B62, 43)),
    ("supabase-token", "SUPABASE_ACCESS_TOKEN", lambda g: "sbp_" + g.s(HEX, 40)),
    ("alibaba-access-key", "ALIBABA_CLOUD_ACCESS_KEY_ID", lambda g: "LTAI" + g.s(B62, 20)),
    ("dynatrace-token", "DT_API_TOKEN", lambda g: f"dt0c01.{g.s(UPPER_DIGITS, 24)}.{g.s(UPPER_DIGITS, 64)}"),
    ("planetscale-token", "PLANETSCALE_TOKEN", lambda g: "pscale_tkn_" + g.s(B64URL, 43)),
    ("1password-token", "OP_SERVICE_ACCOUNT_TOKEN", lambda g: "ops_eyJ" + g.s(B64, 240)),
    ("twitter-bearer-token", "TWITTER_BEARER_TOKEN", lambda g: "A" * 22 + g.s(B62 + "%", 90)),
    (
        "azure-ad-client-secret",
        "AZURE_CLIENT_SECRET",
        lambda g: g.s(B62 + "_~.", 3) + g.s(string.digits, 1) + "Q~" + g.s(B62 + "_~.-", 34),
    ),
    ("aws-session-token", "AWS_SESSION_TOKEN", lambda g: "IQoJb3JpZ2luX2VjE" + g.s(B64, 300) + "=="),
    ("docker-hub-token", "DOCKERHUB_TOKEN", lambda g: "dckr_pat_" + g.s(B64URL, 27)),
]

# (contexts for a token with its env var name; {v} is the secret, {env} the variable, {key} a snake key)
TOKEN_CONTEXTS = [
    "{env}={v}",
    'export {env}="{v}"',
    '{{"{key}": "{v}"}}',
    "{key}: {v}",
    "Use {v} for the deploy job.",
    'client = Client({key}="{v}")',
    "the old key was `{v}`, rotate it",
    "{env}: '{v}'  # staging",
]


def _token_samples(g: Gen, per_shape: int) -> list[Sample]:
    out = []
    for shape, env, make in TOKEN_SHAPES:
        for i in range(per_shape):
            secret = make(g)
            context = TOKEN_CONTEXTS[(i + len(shape)) % len(TOKEN_CONTEXTS)]
            key = env.lower()
            out.append(Sample(shape, context.format(env=env, key=key, v=secret), (secret,)))
    return out


# --- shapes with structure of their own ------------------------------------------------


def _pem(g: Gen, label: str, nbytes: int, end: bool = True, headers: str = "") -> tuple[str, list[str]]:
    lines = g.pem_body(nbytes)
    block = f"-----BEGIN {label}-----\n{headers}" + "\n".join(lines)
    if end:
        block += f"\n-----END {label}-----"
    return block, lines


def _structured(g: Gen) -> list[Sample]:
    out: list[Sample] = []
    add = out.append

    for label, nbytes in [("RSA PRIVATE KEY", 1190), ("EC PRIVATE KEY", 121), ("PRIVATE KEY", 1218)]:
        block, lines = _pem(g, label, nbytes)
        add(Sample("private-key-pem", f"key.pem:\n{block}\n", tuple(lines), keep=("key.pem:",)))
    block, lines = _pem(g, "OPENSSH PRIVATE KEY", 400)
    add(Sample("private-key-openssh", f"```\n{block}\n```", tuple(lines), keep=("```",)))
    block, lines = _pem(
        g, "RSA PRIVATE KEY", 1190, headers="Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,8D2F...\n\n"
    )
    add(Sample("private-key-encrypted", block, tuple(lines)))
    for _ in range(3):
        block, lines = _pem(
            g, g.pick(["RSA PRIVATE KEY", "PRIVATE KEY", "OPENSSH PRIVATE KEY"]), 700, end=False
        )
        cut = g.rng.randint(3, len(lines) - 1)
        text = "\n".join(block.split("\n")[: cut + 1]) + "\n\nThen restart the service."
        add(
            Sample(
                "private-key-truncated",
                text,
                tuple(lines[:cut]),
                keep=("Then restart the service.",),
            )
        )
    body = g.pem_body(600)
    pgp = (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n"
        + "\n".join(body)
        + "\n="
        + g.s(B64, 4)
        + "\n-----END PGP PRIVATE KEY BLOCK-----"
    )
    add(Sample("pgp-private-key", pgp, tuple(body)))
    for _ in range(2):
        lines = g.pem_body(1218)
        pk = "-----BEGIN PRIVATE KEY-----\\n" + "\\n".join(lines) + "\\n-----END PRIVATE KEY-----\\n"
        email = f"deploy@{g.letters(5, 9)}.iam.gserviceaccount.com"
        doc = (
            '{\n  "type": "service_account",\n  "project_id": "demo",\n'
            f'  "private_key_id": "{g.s(HEX, 40)}",\n  "private_key": "{pk}",\n'
            f'  "client_email": "{email}"\n}}'
        )
        add(Sample("gcp-service-account", doc, tuple(lines), keep=(email, '"private_key": "')))

    for _ in range(4):
        user, password = g.letters(4, 8), g.s(B62, g.rng.randint(10, 20))
        host = f"{g.letters(3, 8)}.example.net"
        scheme = g.pick(["postgres", "postgresql", "mysql", "mongodb+srv", "redis", "amqp", "https"])
        url = f"{scheme}://{user}:{password}@{host}:5432/app"
        add(Sample("url-password", f"DATABASE_URL={url}", (password,), keep=(f"{user}:", f"@{host}")))
    for _ in range(3):
        pub, sec = g.s(HEX, 32), g.s(HEX, 32)
        dsn = f"https://{pub}:{sec}@o{g.digits(6)}.ingest.sentry.io/{g.digits(7)}"
        add(Sample("sentry-dsn-with-secret", f"SENTRY_DSN={dsn}", (sec,), keep=(".ingest.sentry.io/",)))
    for _ in range(3):
        path = f"T{g.s(UPPER_DIGITS, 10)}/B{g.s(UPPER_DIGITS, 10)}/{g.s(B62, 24)}"
        add(
            Sample(
                "slack-webhook",
                f"SLACK_WEBHOOK_URL=https://hooks.slack.com/services/{path}",
                (path, path.rsplit("/", 1)[1]),
                keep=("hooks.slack.com",),
            )
        )
    for _ in range(3):
        token = g.s(B64URL, 68)
        add(
            Sample(
                "discord-webhook",
                f'webhook = "https://discord.com/api/webhooks/{g.digits(18)}/{token}"',
                (token,),
                keep=("discord.com/api/webhooks/",),
            )
        )
    for _ in range(4):
        key = g.b64(64)
        conn = (
            f"DefaultEndpointsProtocol=https;AccountName={g.letters(5, 10)};"
            f"AccountKey={key};EndpointSuffix=core.windows.net"
        )
        add(
            Sample(
                "azure-storage-connection-string", g.pick([conn, f'"{conn}"']), (key,), keep=("AccountName=",)
            )
        )
    for _ in range(3):
        key = g.b64(32)
        conn = (
            f"Endpoint=sb://{g.letters(5, 9)}.servicebus.windows.net/;"
            f"SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={key}"
        )
        add(Sample("azure-servicebus-connection-string", conn, (key,), keep=("SharedAccessKeyName=",)))
    for _ in range(3):
        sig = quote(g.b64(32), safe="")
        url = (
            f"https://{g.letters(5, 9)}.blob.core.windows.net/backups?sv=2022-11-02&ss=b&srt=co"
            f"&sp=rl&se=2026-01-01T00:00:00Z&spr=https&sig={sig}"
        )
        add(Sample("azure-sas-token", url, (sig,), keep=("blob.core.windows.net",)))
    for _ in range(3):
        sid, token = "AC" + g.s(HEX, 32), g.s(HEX, 32)
        add(
            Sample(
                "twilio-account-and-auth-token",
                g.pick(
                    [
                        f"TWILIO_ACCOUNT_SID={sid}\nTWILIO_AUTH_TOKEN={token}",
                        f'client = Client("{sid}", "{token}")',
                    ]
                ),
                (sid, token),
            )
        )
    for _ in range(3):
        cred = base64.b64encode(f"{g.letters(4, 8)}:{g.password()}".encode()).decode()
        add(
            Sample(
                "docker-config-auth",
                json.dumps({"auths": {"https://index.docker.io/v1/": {"auth": cred}}}, indent=2),
                (cred,),
                keep=('"auth": "',),
            )
        )
    for _ in range(3):
        token = g.uuid()
        add(
            Sample(
                "npmrc-legacy-auth-token",
                f"//registry.npmjs.org/:_authToken={token}",
                (token,),
                keep=("registry.npmjs.org",),
            )
        )
    for _ in range(3):
        cred = base64.b64encode(f"{g.letters(4, 8)}:{g.password()}".encode()).decode()
        add(
            Sample(
                "basic-auth-header", f"Authorization: Basic {cred}", (cred,), keep=("Authorization: Basic",)
            )
        )
    for _ in range(3):
        token = g.pick([g.s(B62, 40), g.s(B64URL, 32) + "." + g.s(B64URL, 20)])
        text = g.pick(
            [
                f"Authorization: Bearer {token}",
                f'curl -H "Authorization: Bearer {token}" https://api.example.com',
            ]
        )
        add(Sample("bearer-token", text, (token,), keep=("Bearer",)))
    for _ in range(3):
        token = g.uuid()
        add(Sample("heroku-legacy-api-key", f"HEROKU_API_KEY={token}", (token,), keep=("HEROKU_API_KEY=",)))
    for _ in range(3):
        key = g.s(HEX, g.pick([32, 40]))
        line = g.pick([f"DD_API_KEY={key}", f"DD_APP_KEY={key}", f"datadog_api_key: {key}"])
        add(Sample("datadog-key", line, (key,)))
    for _ in range(3):
        secret = g.s(B64, 40)
        text = g.pick(
            [
                f"[default]\naws_access_key_id = AKIA{g.s(BASE32, 16)}\naws_secret_access_key = {secret}\n",
                f"AWS_SECRET_ACCESS_KEY={secret}",
                f'"SecretAccessKey": "{secret}"',
            ]
        )
        add(Sample("aws-secret-access-key", text, (secret,)))
    return out


# --- assignments to secret-like keys ------------------------------------------------------


def _assigned(g: Gen) -> list[Sample]:
    out: list[Sample] = []
    add = out.append
    for _ in range(4):
        key, value = (
            g.pick(["api_key", "apiKey", "access_token", "client_secret", "auth_token"]),
            g.s(B62, 32),
        )
        add(
            Sample(
                "json-api-key",
                json.dumps({key: value, "region": "eu-west-1"}),
                (value,),
                keep=(f'"{key}": "',),
            )
        )
    for _ in range(4):
        value = g.letters(7, 14)
        key = g.pick(["password", "db_password", "Password", "smtp_password"])
        add(
            Sample(
                "yaml-letter-only-password",
                f"database:\n  {key}: {value}\n  host: db",
                (value,),
                keep=(key,),
                code=False,
            )
        )
    for _ in range(3):
        value = g.password()
        add(Sample("env-password", f"DB_PASSWORD={value}", (value,), ("DB_PASSWORD=",), code=False))
    for _ in range(3):
        value = g.s(B62, 40)
        name = g.pick(["FOO", "ACME", "BILLING", "INTERNAL"]) + g.pick(["_TOKEN", "_SECRET", "_API_KEY"])
        add(Sample("export-generic-token", f"export {name}={value}", (value,), (f"export {name}=",)))
    for _ in range(3):
        value = g.password()
        conn = f"Server=tcp:{g.letters(4, 8)}.database.windows.net,1433;Database=app;User Id=sa;Password={value};"
        add(Sample("connection-string-password", conn, (value,), ("User Id=sa;Password=",), code=False))
    for _ in range(2):
        value = g.password()
        add(
            Sample(
                "netrc-password",
                f"machine api.example.com\n  login me@example.com\n  password {value}",
                (value,),
                ("login me@example.com",),
                code=False,
            )
        )
    for _ in range(3):
        value = g.password()
        text = g.pick(
            [
                f"mysql -u root -p{value} app",
                f"docker login -u deploy -p {value} registry.example.com",
                f"app --db-password {value} --port 8080",
                f"curl -u admin:{value} https://api.example.com/v1",
            ]
        )
        add(Sample("command-line-password", text, (value,), code=False))
    for _ in range(2):
        value = g.password()
        add(Sample("xml-password", f"<password>{value}</password>", (value,), ("<password>",), code=False))
    for _ in range(2):
        value = g.password()
        add(
            Sample(
                "php-array-password", f"'password' => '{value}',", (value,), ("'password' => '",), code=False
            )
        )
    for _ in range(3):
        value = "django-insecure-" + g.s(B62 + "!@#%^*(-_=+)", 50)
        add(Sample("django-secret-key", f"SECRET_KEY = '{value}'", (value,), ("SECRET_KEY = '",)))
    for _ in range(3):
        value = g.s(B64URL, 40)
        key = g.pick(["signing_key", "webhook_secret", "encryption_key", "master_key", "session_secret"])
        add(Sample("generic-secret-key", f"{key}: {value}", (value,), (f"{key}: ",)))
    for _ in range(2):
        value = g.password()
        sql = g.pick(
            [f"CREATE USER app WITH PASSWORD '{value}';", f"ALTER USER 'app'@'%' IDENTIFIED BY '{value}';"]
        )
        add(Sample("sql-password", sql, (value,), code=False))
    for _ in range(2):
        value = g.password()
        add(
            Sample(
                "requests-auth-tuple",
                f'r = requests.get(url, auth=("admin", "{value}"))',
                (value,),
                ('"admin"',),
                code=False,
            )
        )
    for _ in range(2):
        value = base64.b64encode(g.password().encode()).decode()
        add(
            Sample(
                "kubernetes-secret-data",
                f"apiVersion: v1\nkind: Secret\ndata:\n  password: {value}\n",
                (value,),
                code=False,
            )
        )
    for _ in range(2):
        value = g.password()
        add(
            Sample(
                "pypirc-password", f"[pypi]\nusername = __token__\npassword = {value}\n", (value,), code=False
            )
        )
    return out


def samples(seed: int = 1729, per_shape: int = 4) -> list[Sample]:
    """The whole positive corpus, reproducible from `seed`."""
    g = Gen(seed)
    return _token_samples(g, per_shape) + _structured(g) + _assigned(g)


def shapes(corpus: list[Sample]) -> list[str]:
    return sorted({s.shape for s in corpus})


# --- negatives: near-misses that must come back unchanged -----------------------------------


def negatives(seed: int = 1729) -> list[str]:
    """Texts with nothing to redact, close to the shapes above."""
    g = Gen(seed)
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + g.rng.randbytes(300)).decode()
    sha = g.s(HEX, 40)
    return [
        f"request id {g.uuid()} failed at 12:03",
        f"trace_id={g.uuid()} span_id={g.s(HEX, 16)}",
        f"fixed in commit {sha} (short {sha[:7]})",
        f"Merge: {g.s(HEX, 7)} {g.s(HEX, 7)}",
        f'"integrity": "sha512-{g.b64(64)}"',
        f'{{file = "pkg-1.0-py3-none-any.whl", hash = "sha256:{g.s(HEX, 64)}"}}',
        f"requests==2.31.0 --hash=sha256:{g.s(HEX, 64)}",
        f"image: ghcr.io/acme/app@sha256:{g.s(HEX, 64)}",
        f"![logo](data:image/png;base64,{png})",
        "OPENAI_API_KEY=sk-...",
        "export OPENAI_API_KEY=sk-xxxxxxxx",
        "api_key: <token>",
        "Authorization: Bearer <token>",
        "Authorization: Bearer $TOKEN",
        'headers = {"Authorization": f"Bearer {token}"}',
        "token: xxxx",
        "password: ********",
        "password: ${DB_PASSWORD}",
        'token: "{{ secrets.GITHUB_TOKEN }}"',
        'password = os.environ["DB_PASSWORD"]',
        'api_key = os.getenv("OPENAI_API_KEY")',
        "api_key = settings.OPENAI_API_KEY",
        "password: str",
        "password = None",
        "conn = connect(host=host, user=user, password=password)",
        "password: <your-password>",
        "API_KEY=your-api-key-here",
        "SECRET_KEY = get_random_secret_key()",
        "def login(user: str, password: str) -> Token:",
        "    token: Optional[str] = None",
        "password: SecretStr",
        "password_length: 16",
        "token_type: bearer",
        "max_tokens: 4096",
        "secret_name: prod-db-credentials",
        '"password": ""',
        "password: null",
        "auth: true",
        "postgres://app:${DB_PASS}@db:5432/app",
        "postgres://user:password@localhost:5432/app",
        "https://user@github.com/acme/app.git",
        "git@github.com:acme/app.git",
        "http://localhost:8080/api/v1/items?page=2",
        "ssh://git@example.com:2222/acme/app.git",
        "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n-----END CERTIFICATE-----",
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
        f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{g.s(B64, 43)} me@laptop",
        "The password reset flow sends a token by email. Use Bearer auth for the API; the secret is stored in Vault.",
        "Password: must be at least 12 characters long",
        "Rotate the API key every 90 days; tokens expire after one hour.",
        'tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")',
        "SSH_AUTH_SOCK=/tmp/ssh-XXXXabcd/agent.1234",
        "arn:aws:iam::123456789012:role/deploy",
        "secretKeyRef:\n  name: db\n  key: password",
        "pk_live_" + "51H" + g.s(B62, 21) + " is the publishable key (public)",
        "test_password_reset_token_expires_after_one_hour",
        "color: #a1b2c3; margin: 0 auto",
        "version 3.11.7, released 2023-12-04",
        "sk-learn is not a package; use scikit-learn",
        "The AKIA prefix marks AWS access key ids.",
        "Use `lore add --title 'x'` to save a memory.",
        "PWD=/home/me/projects/app",
        "token = request.headers.get('Authorization')",
        "password_hash: $2b$12$" + g.s(B62 + "./", 53),
    ]


# --- code: snippets for mask_code -------------------------------------------------------------


def code_negatives() -> list[str]:
    """Realistic code that handles secrets without containing any."""
    return [
        "def check_password(password: str, hashed: bytes) -> bool:\n    return bcrypt.checkpw(password.encode(), hashed)\n",
        "token = secrets.token_urlsafe(32)\nheaders = {'Authorization': f'Bearer {token}'}\n",
        'SECRET_KEY = os.environ["SECRET_KEY"]\nDEBUG = os.environ.get("DEBUG") == "1"\n',
        "const apiKey = process.env.OPENAI_API_KEY;\nconst client = new OpenAI({ apiKey });\n",
        "func login(user, password string) error {\n\treturn db.Auth(user, password)\n}\n",
        "class Settings(BaseSettings):\n    api_key: SecretStr\n    password: str = ''\n    token_ttl: int = 3600\n",
        'password = getpass.getpass("Password: ")\nif not password:\n    raise SystemExit("no password")\n',
        'assert hashlib.sha256(b"abc").hexdigest() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"\n',
        "CACHE_KEY_PREFIX = 'lore:v1:'\nsession_key = f'{CACHE_KEY_PREFIX}{user_id}'\n",
        'url = "https://api.example.com/v1/items?page=2&per_page=100"\n',
        'ICON = "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9hAAAAGklEQVQ4jWNgGAWjYBSMglEwCkbBKBgFAAAEEAABNNvvWQAAAABJRU5ErkJggg=="\n',
        'test_token = "test-token"\nexpected_password = "correct horse battery staple"\n',
    ]


def code_positives(seed: int = 1729) -> list[tuple[str, str]]:
    """(snippet, secret) pairs: committed secrets mask_code must catch."""
    g = Gen(seed)
    github, stripe, aws = "ghp_" + g.s(B62, 36), "sk_live_" + g.s(B62, 24), "AKIA" + g.s(BASE32, 16)
    django = g.s(B62, 50)
    password = g.s(B62, 20)
    key_lines = g.pem_body(600)
    pem = "-----BEGIN RSA PRIVATE KEY-----\\n" + "\\n".join(key_lines) + "\\n-----END RSA PRIVATE KEY-----"
    hexkey = g.s(HEX, 40)
    return [
        (f'GITHUB_TOKEN = "{github}"\n', github),
        (f'stripe.api_key = "{stripe}"\ncharge = stripe.Charge.create(amount=100)\n', stripe),
        (f"AWS_ACCESS_KEY_ID = '{aws}'\n", aws),
        (f"SECRET_KEY = '{django}'\nDEBUG = False\n", django),
        (f'DATABASE_URL = "postgres://app:{password}@db.internal:5432/app"\n', password),
        (f'PRIVATE_KEY = "{pem}"\n', key_lines[1]),
        (f'config = {{"api_key": "{hexkey}", "region": "eu"}}\n', hexkey),
        (f'headers = {{"Authorization": "Bearer {password}"}}\n', password),
    ]
