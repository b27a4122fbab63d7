"""Judging a candidate value: machine-made, a placeholder, or a reference in code.

A secret is a *literal*: ``password: hunter2`` is one, ``password: str``,
``password = None``, ``password=password``, ``password: ${DB_PASSWORD}``,
``os.environ["X"]`` and ``<your-password>`` are not. Tokens are machine-made:
long, mixing letters and digits, high in entropy, not made of words.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter

MARKER = "[REDACTED:"

# Template syntax: a value containing these is never a real secret.
_PLACEHOLDER = re.compile(
    r"""(?ix)
      \*{3,} | \.{3} | \u2026 | \#{3,}
    | <[^<>\n]*> | \$\{ | \{\{ | \$\( | %\( | ^\$[a-z_] | ^%[a-z_]+%$ | ^\{[\w.]*\}$ | ^:[a-z_]+$
    | ^(?:my|the|some)[_\-]?(?:secret|token|password|pass|key|api) | ^(?:secret|password|token|key)[_\-]?\d{0,3}$
    | process\.env | os\.environ | getenv | env\( | \bsecrets\. | vault: | ssm: | !ref\b | ^!
    """
)
# Filler, format fields and words of examples: a placeholder unless what is left still
# looks random (AWS's documented example secret ends in EXAMPLEKEY but is random before
# it; a URL-encoded token may contain "%i").
_PLACEHOLDER_WORDS_IN = re.compile(
    r"(?i)x{4,}|%[sdifr](?![A-Za-z0-9])|\{\d*\}"
    r"|your|example|placeholder|change[_\-]?me|redacted|dummy|fake|sample|insert[_\-]|replace[_\-]?"
    r"|\btodo\b|fixme|\btbd\b|[_\-]here\b|^here$|^n/?a$"
)
_PLACEHOLDER_WORDS = frozenset(
    """password passwd pass pwd secret secrets token apikey api_key api-key key value string str
    none null nil true false yes no on off required optional empty unset undefined hidden masked
    omitted test testing foo bar baz foobar qux user username default values args kwargs val data
    result response config settings params options opts input line text raw new old getpass
    password1 secret1 token1 abc abcd abc123 asdf qwerty letmein changeit
    basic bearer digest oauth oauth2 kerberos ldap saml oidc jwt ntlm enabled disabled internal
    external anonymous public private session""".split()
)
_TYPE_NAMES = frozenset(
    """str bytes int bool float any object string secretstr secretbytes optional text char varchar
    uuid dict list number boolean bytearray callable typing.any""".split()
)
_TYPE_SHAPE = re.compile(r"[A-Z]\w*(?:Str|String|Type|Field|Secret|Password|Token|Key|Bytes)")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LETTER_RUN = re.compile(r"[A-Z]?[a-z]{4,}|[A-Z]{5,}")
_VOWELS = frozenset("aeiouy")
_PATH = re.compile(r"(?:[~.]{0,2}/|[A-Za-z]:\\|\w+://)")
_EMAIL = re.compile(r"[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+")
# Host names (labels of real hosts are short: a dotted token is not a host).
_HOSTNAME = re.compile(r"[a-z0-9\-]{1,15}(?:\.[a-z0-9\-]{1,15})+(?::\d{1,5})?")
_VERSIONISH = re.compile(r"v?\d{1,4}(?:\.\d{1,4}){1,3}(?:[\-+.][\w.]*)?")


def shannon(value: str) -> float:
    """Shannon entropy in bits per character (0 for empty)."""
    if not value:
        return 0.0
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def is_placeholder(value: str) -> bool:
    """Example or template values: xxxx, <token>, ${VAR}, your-key-here, 'password'..."""
    low = value.lower()
    if low in _PLACEHOLDER_WORDS or len(set(low)) <= 2 or _PLACEHOLDER.search(value):
        return True
    if _PLACEHOLDER_WORDS_IN.search(value):
        residue = _PLACEHOLDER_WORDS_IN.sub("", value)
        return not looks_random(residue, min_len=12, min_entropy=3.0, _check_placeholder=False)
    return False


def is_reference(value: str, key: str = "") -> bool:
    """An unquoted value that names something instead of being a literal.

    Types (``str``, ``Optional[str]``), constants (``None``, ``null``),
    expressions (calls, subscripts, ``self.password``), template and shell
    variables, and identifiers that repeat the key (``password=password``,
    ``token=github_token``).
    """
    low = value.lower()
    if low in _TYPE_NAMES or _TYPE_SHAPE.fullmatch(value):
        return True
    if value[0] in "$%{<([!*&@#\\`" or any(c in value for c in "()[]{}"):
        return True
    if _DOTTED.fullmatch(value) and not looks_random(value, min_len=8, min_entropy=2.5):
        return True  # self.password, settings.SECRET_KEY (a dotted random literal is not a name)
    if _IDENTIFIER.fullmatch(value):
        # password=password, self.credentials = credentials, token = tok, token = github_token
        if low in key.lower() or ("_" in value and not any(c.isdigit() for c in value)):
            return True
    return False


def is_marker(value: str) -> bool:
    """Text Lore wrote itself: ``[REDACTED:kind]``."""
    return value.startswith(MARKER)


def _is_wordlike(run: str) -> bool:
    """A letter run that reads like a word: enough vowels, no long consonant cluster."""
    low = run.lower()
    vowels = sum(c in _VOWELS for c in low)
    if vowels < 0.28 * len(low):
        return False
    cluster = 0
    for c in low:
        cluster = 0 if c in _VOWELS else cluster + 1
        if cluster > 3:
            return False
    return True


def wordiness(value: str) -> float:
    """Share of the value made of word-like letter runs (words are not random)."""
    wordy = sum(len(run) for run in _LETTER_RUN.findall(value) if _is_wordlike(run))
    return wordy / max(len(value), 1)


def not_a_secret_shape(value: str) -> bool:
    """Paths, URLs, e-mail addresses, host names, versions and the names of
    hashes and encodings ("the password is SHA-256 hashed", "Passwort ist
    bcrypt-gehasht"): literal, but not secrets."""
    return bool(
        _PATH.match(value)
        or _EMAIL.fullmatch(value)
        or _VERSIONISH.fullmatch(value)
        or _HOSTNAME.fullmatch(value)
        or _ALGORITHM.fullmatch(value)
    )


# A hash, key derivation or encoding named in prose, with a suffix of the language's own.
_ALGORITHM = re.compile(
    r"(?i)(?:sha-?(?:1|224|256|384|512)|sha3-?\d{3}|md5|bcrypt|scrypt|argon2(?:id|i|d)?|pbkdf2|"
    r"utf-?(?:8|16|32)|base64|hmac|aes-?\d{3})(?:[-_][a-zäöüéèàç]+)*[.,;:]?"
)


def looks_random(
    value: str, min_len: int = 16, min_entropy: float = 3.0, *, _check_placeholder: bool = True
) -> bool:
    """Machine-made: long enough, letters and digits mixed, high entropy, few words."""
    if len(value) < min_len or " " in value:
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    if not (has_digit and has_alpha):
        return False
    if not_a_secret_shape(value) or (_check_placeholder and is_placeholder(value)):
        return False
    return shannon(value) >= min_entropy and wordiness(value) < 0.45


def plausible_token(value: str) -> bool:
    """Looser than looks_random, for values already under a secret-like key in prose.

    ``token: 3f9a...`` or ``client_secret: kT8vQ...`` count; a short word,
    a sentence, a path or a placeholder does not.
    """
    if len(value) < 10 or " " in value.strip() or not_a_secret_shape(value) or is_placeholder(value):
        return False
    if looks_random(value, min_len=10, min_entropy=3.0):
        return True
    # Letter-only tokens: mixed case, not a dotted or snake-case name, few words.
    mixed_case = any(c.islower() for c in value) and any(c.isupper() for c in value)
    return (
        len(value) >= 16
        and mixed_case
        and not _DOTTED.fullmatch(value)
        and shannon(value) >= 3.5
        and wordiness(value) < 0.4
    )


def plausible_password(value: str, *, quoted: bool, followed_by_text: bool, min_len: int = 4) -> bool:
    """A password under a password-like key: letter-only ones count (``password: hunter``).

    When more words follow an unquoted value on the same line ("password: must
    be 8 characters"), only values with a digit or a symbol count.
    """
    stripped = value.strip()
    if len(stripped) < min_len or is_placeholder(stripped) or not_a_secret_shape(stripped):
        return False
    if not quoted and " " in stripped:
        return False
    if quoted and " " in stripped and (len(stripped.split()) > 5 or any(c in stripped for c in "\"'\\")):
        return False  # a sentence or a message in quotes, not a passphrase
    if followed_by_text:
        return any(not c.isalpha() for c in stripped)
    return True


def is_basic_credentials(token: str) -> bool:
    """Base64 of ``user:password`` (what HTTP Basic auth and docker's "auth" carry)."""
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    _, sep, password = decoded.partition(":")
    return bool(sep and password) and decoded.isprintable()
