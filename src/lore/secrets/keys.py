"""Which names of keys, variables, fields and flags hold secrets.

A key is split into lower-case words (``AWS_SECRET_ACCESS_KEY``, ``apiKey``,
``x-api-key``, ``_authToken``) and judged by its words: ``password`` and
friends mark a password, ``token``/``secret``/``<api|access|private...> key``
mark a machine-made secret. Words that make the key *about* a secret rather
than holding one (``password_length``, ``token_type``, ``secret_name``,
``next_token``) clear it.
"""

from __future__ import annotations

import re
from enum import Enum

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


class KeyClass(Enum):
    """What a secret-like key holds: a password (any value counts) or a token."""

    PASSWORD = "password"
    TOKEN = "token"


_PASSWORD_WORDS = ("password", "passwd", "passphrase", "passcode", "passwort")
_PASSWORD_EXACT = frozenset({"pwd", "pass", "pw", "mdp"})
# "Password" in other languages (matched anywhere in the key, lower-cased).
FOREIGN_PASSWORD_WORDS = (
    "contraseña",
    "contrasena",
    "senha",
    "wachtwoord",
    "hasło",
    "haslo",
    "salasana",
    "jelszó",
    "lozinka",
    "heslo",
    "parola",
    "mot de passe",
    "mật khẩu",
    "пароль",
    "密码",
    "密碼",
    "口令",
    "パスワード",
    "비밀번호",
)
# The names above of several words: one key, not the first word of a sentence.
PHRASES = tuple(word for word in FOREIGN_PASSWORD_WORDS if " " in word)
_TOKEN_WORDS = (
    "token",
    "secret",
    "credential",
    "credentials",
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
)
_TOKEN_EXACT = frozenset({"creds", "secrets", "accountkey", "authkey", "sharedaccesskey", "sas"})
# "<word> key" pairs that name a secret key (a bare "key" is usually a dict key).
_KEY_QUALIFIERS = frozenset(
    {
        "api",
        "access",
        "secret",
        "private",
        "account",
        "auth",
        "client",
        "master",
        "signing",
        "encryption",
        "app",
        "license",
        "service",
        "shared",
        "subscription",
        "storage",
        "consumer",
        "webhook",
        "admin",
        "deploy",
        "hmac",
        "jwt",
        "session",
        "primary",
        "secondary",
        "root",
        "write",
        "ingest",
        "server",
        "integration",
        "x",
    }
)
# Last words that make the key describe a secret instead of holding one.
_ABOUT_WORDS = frozenset(
    """id ids name names type types file files filename path paths dir url uri urls endpoint host
    length len size count expiry expires expiration exp ttl timeout hint policy prompt field fields
    label header headers env var vars hash hashed hasher mode min max required enabled enable disabled
    changed reset validator validation strength manager prefix suffix limit method methods scheme
    version provider kind regex pattern column index format location source ref arn stdin cmd command
    class cls used usage error errors message msg input widget form description desc template help
    title display backend handler callback func fn factory generator param params arg args option
    options flag flags list map dict set cache lock bytes bits chars alphabet rules rule policy
    salt iterations rounds algorithm algo encoding charset placeholder regexp attr attribute
    property prop store storage service server
    pem crt cert txt json yaml yml p12 pfx der csr""".split()
)
_NOT_FIRST_WORDS = frozenset(
    "page next prev previous continuation cancellation pagination sync max min num is has use no show "
    "hide forgot reset expected count".split()
)


def words(key: str) -> list[str]:
    """Lower-case words of a key: ``AWS_SECRET_ACCESS_KEY`` -> aws, secret, access, key."""
    return [w.lower() for w in _WORD.findall(key)]


def classify(key: str) -> KeyClass | None:
    """The kind of secret a key holds, or None when it is not secret-like."""
    low = key.lower()
    if any(word in low for word in FOREIGN_PASSWORD_WORDS):
        return KeyClass.PASSWORD
    parts = words(key)
    if not parts or parts[-1] in _ABOUT_WORDS or parts[0] in _NOT_FIRST_WORDS:
        return None
    found: KeyClass | None = None
    for i, word in enumerate(parts):
        if word in _PASSWORD_EXACT or any(word.endswith(w) for w in _PASSWORD_WORDS):
            return KeyClass.PASSWORD
        if (
            word in _TOKEN_EXACT
            or any(word.endswith(w) for w in _TOKEN_WORDS)
            or (word == "key" and i > 0 and parts[i - 1] in _KEY_QUALIFIERS)
            or (word == "auth" and i == len(parts) - 1)
        ):
            found = KeyClass.TOKEN
    return found
