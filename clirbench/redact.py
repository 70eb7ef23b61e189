"""Credentials out of every URL we show (user:password@ and key-like query parameters) and out of
command lines kept as provenance (``*KEY*=``, ``*TOKEN*=``, ``*SECRET*=``, ``*PASSWORD*=``
assignments, ``--api-key X`` and the like, ``sk-…`` keys)."""
from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["redact", "redact_url", "redact_command"]

MASK = "***"
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
_SECRET = re.compile(r"(?i)(^|[_-])(key|apikey|token|secret|password|passwd|pwd|sig|signature|auth|"
                     r"authorization|credential|credentials|access[_-]?token|api[_-]?key)$")


def redact_url(url: str) -> str:
    """``url`` with its userinfo and secret-looking query values replaced by ``***``."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            query = urlencode([(k, MASK if _SECRET.search(k) else v) for k, v in pairs], safe="*/:")
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:  # unparsable: show nothing after the scheme
        return url.split("://", 1)[0] + f"://{MASK}"


def redact(text: str) -> str:
    """``text`` with every URL in it redacted (see :func:`redact_url`)."""
    return _URL.sub(lambda m: redact_url(m.group(0)), str(text))


_WORD = r"[A-Za-z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)[A-Za-z0-9_]*"
# NAME=value (an environment assignment or a KEY=VALUE option), the value up to the next blank
_ASSIGN = re.compile(rf"(?i)(?<![A-Za-z0-9_-])({_WORD})=(\"[^\"]*\"|'[^']*'|\S+)")
# --api-key X, --api-key=X, --token X, --password X, --secret X, --auth-token X, -p not touched
_FLAG = re.compile(r"(?i)(--(?:[A-Za-z0-9]+[-_])*(?:key|apikey|token|secret|password|passwd|pwd|credentials?)"
                   r"(?:[-_][A-Za-z0-9]+)*)(=|\s+)(\"[^\"]*\"|'[^']*'|\S+)")
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}")
_KEYLIKE = re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{12,}|\b(ghp|gho|ghs|hf)_[A-Za-z0-9]{16,}|\bAKIA[0-9A-Z]{16}\b")


def redact_command(text: str) -> str:
    """A command line with its credentials replaced by ``***``: URLs (:func:`redact`), secret-named
    assignments and options, bearer tokens and well-known key shapes."""
    text = redact(text)
    text = _ASSIGN.sub(lambda m: f"{m.group(1)}={MASK}", text)
    text = _FLAG.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {MASK}", text)
    return _KEYLIKE.sub(MASK, text)
