"""Secrets out of the text clirbench shows or keeps: commands recorded on leaderboards, URLs, translator
specs, error messages (docs/leaderboards.md, "What a recorded command keeps").

Two rule sets, one result. The maintained one is detect-secrets' (its regex detectors' token shapes:
AWS, GitHub, GitLab, Slack, Stripe, OpenAI, JWT, SendGrid, Twilio, ...; its keyword list of secret
variable names). The command-line structure it cannot know is spelled here: ``NAME=value`` with a
secret-looking NAME (environment prefixes, ``export``, ``KEY=VALUE`` options, URL query parameters),
``--api-key X`` and ``--password=X``, ``setenv NAME value``, ``"api_key": "x"``, ``X-API-Key: x`` and
``Authorization: Bearer x`` (JSON, YAML, HTTP headers), ``mysql -pX``, ``curl -u user:X``, URL
userinfo, private key blocks, and well-known token prefixes (``sk-``, ``ghp_``, ``xoxb-``, ``hf_``,
``AKIA``...) of any length. Each secret value becomes ``***``; the rest of the text is kept.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterator

__all__ = ["MASK", "redact", "redact_url", "redact_command", "redact_data", "secret_name"]

MASK = "***"

# a name is secret-looking when its last word is one of _LAST or ends with one of _SUFFIXES, when it
# holds one of _PARTS (words split at _, -, ., camelCase), or when detect-secrets' keyword list finds it
_LAST = frozenset({"key", "apikey", "token", "secret", "pass", "pw", "pwd", "passwd", "password", "passphrase",
                   "auth", "authorization", "credential", "credentials", "cred", "creds", "sig", "signature",
                   "cookie", "jwt", "bearer", "pat", "pin"})
_PARTS = ("password", "passwd", "passphrase", "secret", "credential", "apikey", "accesskey", "privatekey",
          "authtoken", "accesstoken", "refreshtoken", "sessiontoken", "securitytoken")
_SUFFIXES = ("token", "secret", "password", "passwd", "apikey")  # csrftoken, clientsecret
_WORDS = re.compile(r"[\W_]+|(?<=[a-z0-9])(?=[A-Z])")

_NAME = r"[^\W\d][\w.-]*"
_START = r"""(?:^|(?<=[\s"'`;&|(){}\[,:?$/-]))"""
_AT = r"(?P<value>)(?=\S)"  # where the value starts (its end: _extent)

_ASSIGN = re.compile(rf"{_START}(?P<name>{_NAME})(?:=|\s*=\s*(?=[\"'])){_AT}")
_FLAG = re.compile(rf"""(?:^|(?<=[\s"'`;&|(]))-{{1,2}}(?P<name>{_NAME})\s+(?!-){_AT}""")
_SETENV = re.compile(rf"""(?:^|(?<=[\s;&|(]))(?:setenv|set(?:\s+-[A-Za-z]+)*)\s+(?P<name>{_NAME})(?:\s*=\s*|\s+){_AT}""")
_SCHEME = (r"(?i:bearer|basic|token|digest|bot|apikey|api-key|key|hmac|ssws|oauth|negotiate|ntlm|"
           r"aws4-hmac-sha256|googlelogin)")
_FIELD_RE = re.compile(rf"""(?:^|(?<=[\s"'`{{,\[(=]))(?P<q>\\?["']?)(?P<name>{_NAME})(?P=q)[ \t]*:(?!//)[ \t]*"""
                       rf"""(?:(?P<scheme>{_SCHEME})[ \t]+)?{_AT}""")
_BEARER = re.compile(r"""(?i:\bbearer)\s+(?P<value>[^\s'"]+)""")
_BASIC = re.compile(r"\bBasic\s+(?P<value>[A-Za-z0-9+/]{6,}={0,2})(?![\w+/=])")
_USERINFO = re.compile(r"""(?<=://)(?P<value>[^\s/'"]*)@""")
_PRIVATE_KEY = re.compile(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?P<value>.*?)(?=-----END|\Z)"
                          r"|PuTTY-User-Key-File-\d+:(?P<putty>.*)", re.S)
# programs that take a secret in a short option: mysql -pX, sshpass -p X, redis-cli -a X, docker login -p X,
# curl -u user:X, httpie -a user:X
_PROGRAM = re.compile(r"(?<![\w./-])(?P<prog>mysql\w*|mariadb\w*|sshpass|redis-cli|curl|http|https|docker\s+login)(?=\s)"
                      r"(?P<args>[^;&|\n]*)")
_PROGRAM_OPTION = {
    "mysql": re.compile(rf"(?:^|(?<=\s))-p{_AT}"),
    "sshpass": re.compile(rf"(?:^|(?<=\s))-p\s*{_AT}"),
    "redis-cli": re.compile(rf"(?:^|(?<=\s))-a\s*{_AT}"),
    "curl": re.compile(rf"(?:^|(?<=\s))(?:-u|-U|--user|--proxy-user)(?:\s+|=)?{_AT}"),
    "http": re.compile(rf"(?:^|(?<=\s))-a\s*{_AT}"),
    "docker": re.compile(rf"(?:^|(?<=\s))-p\s*{_AT}"),
}
# well-known token prefixes, any length (detect-secrets' detectors want the full length of each)
_SHAPES = re.compile(r"""(?<![\w./-])(?:
      sk-[\w-]{6,}                                   # OpenAI, Anthropic (sk-ant-), DeepSeek...
    | [spr]k_(?:live|test)_\w+                       # Stripe
    | gh[pousr]_\w{4,} | github_pat_\w+               # GitHub
    | (?:glpat|gldt|glft|glsoat|glrt|glcbt|glimt|glptt|glagent|gloas)-[\w-]{8,}   # GitLab
    | xox[a-z]-[\w-]+ | xapp-[\w-]+                    # Slack
    | hf_[A-Za-z0-9]{16,}                             # Hugging Face
    | npm_\w{16,} | pypi-[\w-]{16,}
    | AIza[\w-]{20,} | ya29\.[\w.-]+                  # Google API key, OAuth access token
    | (?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[0-9A-Z]{12,} # AWS access key id
    )""", re.X)
_LEFT, _RIGHT = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.+~"), \
    set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.+~/=")


def redact(text: str) -> str:
    """``text`` with every secret value found in it replaced by ``***`` (idempotent)."""
    text = str(text)
    spans = [span for rule in _RULES for span in rule(text)]
    if not spans:
        return text
    out, at = [], 0
    for start, end in _merged(spans):
        out += [text[at:start], MASK]
        at = end
    return "".join(out) + text[at:]


def redact_command(command: str) -> str:
    """A command line as it may be recorded (:func:`redact`)."""
    return redact(command)


def redact_url(url: str) -> str:
    """``url`` with its userinfo and secret query values replaced by ``***`` (:func:`redact`)."""
    return redact(url)


def redact_data(value):
    """A JSON-like value with :func:`redact` applied to every string in it; the string value of a
    secret-looking key (``{"api_key": ...}``, a pair ``["token", ...]``) becomes ``***`` whole."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: MASK if isinstance(v, str) and secret_name(str(k)) else redact_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if len(value) == 2 and all(isinstance(v, str) for v in value) and secret_name(value[0]):
            return [value[0], MASK]
        return [redact_data(v) for v in value]
    return value


def secret_name(name: str) -> bool:
    """Whether a variable, option, header or parameter name looks like it holds a secret
    (``OPENAI_API_KEY``, ``--auth-token``, ``X-API-Key``, ``MYSQL_PWD``, ``apiKey``; not ``--max-tokens``)."""
    words = [w.lower() for w in _WORDS.split(name) if w]
    if not words or words[0] == "no":
        return False
    return words[-1] in _LAST or words[-1].endswith(_SUFFIXES) or any(p in "".join(words) for p in _PARTS) \
        or _keywords().search("_".join(words)) is not None


# -- rules: each yields the (start, end) spans of secret values in a text ---------------------------


def _named(pattern: re.Pattern, text: str) -> Iterator[tuple[int, int]]:
    for m in pattern.finditer(text):
        if secret_name(m["name"]):
            yield _inner(text, m.start("value"), _extent(text, m.start("value")))


def _fields(text: str) -> Iterator[tuple[int, int]]:
    for m in _FIELD_RE.finditer(text):
        if secret_name(m["name"]):
            start, region = m.start("value"), _enclosing(text, m.start("name"))
            header = region is not None and not m["q"] and (m["scheme"] or region[0] == m.start("name") - 1)
            if header and text[start] not in "\"'":  # -H 'Cookie: a=b; c=d', 'Authorization: Digest a="b", c="d"'
                line = text.find("\\n", start, region[1])
                yield start, region[1] if line < 0 else line
            else:
                yield _inner(text, start, _extent(text, start, field=not m["scheme"]))


def _values(pattern: re.Pattern):
    def rule(text: str) -> Iterator[tuple[int, int]]:
        for m in pattern.finditer(text):
            group = "value" if m["value"] is not None else "putty"
            yield m.span(group)
    return rule


def _programs(text: str) -> Iterator[tuple[int, int]]:
    for m in _PROGRAM.finditer(text):
        prog = m["prog"]
        option = _PROGRAM_OPTION[prog.split()[0] if not prog.startswith(("mysql", "mariadb", "http")) else
                                 "mysql" if prog.startswith("m") else "http"]
        base = m.start("args")
        for o in option.finditer(m["args"]):
            start = base + o.start("value")
            start, end = _inner(text, start, _extent(text, start))
            if prog in ("curl", "http", "https"):  # user:password, the user kept
                colon = text.find(":", start, end)
                if colon < 0:
                    continue
                start = colon + 1
            yield start, end


def _shapes(text: str) -> Iterator[tuple[int, int]]:
    for m in _SHAPES.finditer(text):
        yield _token(text, *m.span())
    for pattern in _detectors():
        for m in pattern.finditer(text):
            groups = [i for i in range(1, (pattern.groups or 0) + 1) if m.group(i)]
            if groups:
                yield from (_token(text, *m.span(i)) for i in groups)
            else:
                start, end = m.span()
                while start < end and text[start] in " \t\n=:\"'":
                    start += 1
                while end > start and text[end - 1] in " \t\n\"'":
                    end -= 1
                yield _token(text, start, end)


_RULES = (lambda t: _named(_ASSIGN, t), lambda t: _named(_FLAG, t), lambda t: _named(_SETENV, t), _fields,
          _values(_BEARER), _values(_BASIC), _values(_USERINFO), _values(_PRIVATE_KEY), _programs, _shapes)


# -- helpers ------------------------------------------------------------------------------------------


def _inner(text: str, start: int, end: int) -> tuple[int, int]:
    """The span of a value without its quotes, when it is one quoted string."""
    value = text[start:end]
    for quote in ('\\"', '"', "'"):
        n = len(quote)
        if len(value) >= 2 * n and value.startswith(quote) and value.endswith(quote) \
                and quote not in value[n:-n]:
            return start + n, end - n
    return start, end


def _extent(text: str, start: int, field: bool = False) -> int:
    """Where the value that starts at ``start`` ends: one shell word (quoted pieces joined), never past
    the quoted string it starts in, nor a blank, a shell operator or a literal ``\\n``; a JSON or YAML
    ``field`` also ends at ``,`` ``}`` ``]``."""
    region = _enclosing(text, start)
    end = len(text) if region is None else region[1]
    stops = "&;|<>()`" + (",}]" if field else "")
    i = start
    while i < end:
        c = text[i]
        if c == "\\":
            if text.startswith("n", i + 1):
                break
            i += 2
        elif c in "\"'" and (region is None or c != text[region[0]]):
            i = _close(text, i) + 1
        elif c.isspace() or c in stops:
            break
        else:
            i += 1
    return min(i, end)


def _enclosing(text: str, at: int) -> tuple[int, int] | None:
    """(opening quote, closing quote or the end) of the quoted string ``at`` lies in, if any."""
    for opened, closed in _quoted(text):
        if opened < at <= closed:
            return opened, closed
    return None


def _close(text: str, opened: int) -> int:
    """The closing quote of the string opened at ``opened`` (the end of the text if none)."""
    quote, i = text[opened], opened + 1
    while i < len(text):
        if text[i] == "\\" and quote == '"':
            i += 2
        elif text[i] == quote:
            return i
        else:
            i += 1
    return len(text)


@lru_cache(maxsize=16)
def _quoted(text: str) -> tuple[tuple[int, int], ...]:
    """The quoted strings of a shell text, as (opening quote, closing quote or the end)."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] in "\"'":
            out.append((i, _close(text, i)))
            i = out[-1][1] + 1
        else:
            i += 1
    return tuple(out)


def _token(text: str, start: int, end: int) -> tuple[int, int]:
    """A found secret widened to the whole token around it (a JWT's signature, a longer key)."""
    while start > 0 and text[start - 1] in _LEFT:
        start -= 1
    while end < len(text) and text[end] in _RIGHT:
        end += 1
    return start, end


def _merged(spans) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(s, e) for s, e in out]


@lru_cache(maxsize=1)
def _keywords() -> re.Pattern:
    """detect-secrets' list of secret variable names (``api_?key``, ``db_?pass``, ``pwd``...)."""
    from detect_secrets.plugins.keyword import DENYLIST

    return re.compile("|".join(DENYLIST), re.I)


@lru_cache(maxsize=1)
def _detectors() -> tuple[re.Pattern, ...]:
    """The patterns of detect-secrets' regex detectors, but public IPs (not a credential), npm's (its
    pattern runs to the end of the line) and private key headers (the block is masked whole here)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    skip = {"IPPublicDetector", "NpmDetector", "PrivateKeyDetector"}
    classes = sorted(get_mapping_from_secret_type_to_class().values(), key=lambda c: c.__name__)
    return tuple(p for c in classes if issubclass(c, RegexBasedDetector) and c.__name__ not in skip
                 for p in c.denylist)
