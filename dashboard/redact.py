"""The access token never reaches a log: `redact_target` for the access log (dashboard.serve),
`redact` and the `RedactTokens` filter on the one logging handler (settings.LOGGING). Imports
nothing of Django: the logging configuration loads it before the apps.

One function decides which query parameter carries the token, `is_token_param`, and the login
(`dashboard.access`) and the access log's redaction both ask it about the parameter's name as
Django's `QueryDict` decodes it (`+` a space, `%XX` as UTF-8): whatever the login takes for the
token is redacted, however it was spelled on the wire (`?tok%65n=`, `?%74oken=`, `?TOKEN=`). A
path is redacted as the Kubernetes API routes it, decoded (`/k8s/%74oken/…`, `/k8s/token%2F…`).
"""

from __future__ import annotations

import logging
import re
from urllib.parse import quote, unquote

TOKEN_PARAM = "token"
REDACTED = "[redacted]"


def query_name(raw: str) -> str:
    """A query parameter's name as Django's QueryDict and `urllib.parse.parse_qsl` read it."""
    return unquote(raw.replace("+", " "), encoding="utf-8", errors="replace")


def is_token_param(name: str) -> bool:
    """The (decoded) query parameter `name` carries the access token: `token`, in any case."""
    return name.lower() == TOKEN_PARAM


def _spelled(word: str) -> str:
    """A pattern for `word` with any of its letters percent-encoded (free text: a logged URL)."""
    return "".join(f"(?:{re.escape(c)}|%{ord(c.lower()):02x}|%{ord(c.upper()):02x})" for c in word)


_TOKEN_QUERY = re.compile(rf"((?:^|[?&;\s]){_spelled(TOKEN_PARAM)}=)[^&;\s\"']*", re.IGNORECASE)
_TOKEN_PATH = re.compile(rf"((?:/|%2f){_spelled(TOKEN_PARAM)}(?:/|%2f))[^/?\s\"']*", re.IGNORECASE)
_BEARER = re.compile(r"(bearer\s+)[^\s\"',]+", re.IGNORECASE)
# What a decoded path may show in a log line as it is; the rest stays percent-encoded.
_PATH_SAFE = "/:@!$&'()*+,;=-._~"


def redact(text: str) -> str:
    """`text` with every `token=` query value, `/token/<…>` path segment and bearer token replaced
    (their names spelled with percent-encoded letters too)."""
    text = _TOKEN_QUERY.sub(rf"\1{REDACTED}", text)
    text = _TOKEN_PATH.sub(rf"\1{REDACTED}", text)
    return _BEARER.sub(rf"\1{REDACTED}", text)


def redact_target(target: str) -> str:
    """A request target (`path?query`, as sent) with the token's value replaced wherever the
    application would find it: in each query parameter that `is_token_param` once decoded, and
    in a `/token/<…>` segment of the decoded path (that path is then logged decoded, re-quoted)."""
    path, sep, query = target.partition("?")
    decoded = unquote(path, errors="replace")
    if _TOKEN_PATH.search(decoded):
        path = quote(_TOKEN_PATH.sub(rf"\1{REDACTED}", decoded), safe=_PATH_SAFE)
    if sep:
        pairs = []
        for pair in query.split("&"):  # Django and parse_qsl split on & only
            name, eq, _value = pair.partition("=")
            pairs.append(f"{name}={REDACTED}" if eq and is_token_param(query_name(name)) else pair)
        query = "&".join(pairs)
    return redact(path + sep + query)


class RedactTokens(logging.Filter):
    """A logging filter: the formatted message (and traceback) of every record, redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True
