"""Credentials out of every URL we show: user:password@ and key-like query parameters."""
from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["redact", "redact_url"]

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
