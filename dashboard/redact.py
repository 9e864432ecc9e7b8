"""The access token never reaches a log: `redact` for the access log (dashboard.serve) and the
`RedactTokens` filter on the one logging handler (settings.LOGGING). Imports nothing of Django:
the logging configuration loads it before the apps."""

from __future__ import annotations

import logging
import re

_TOKEN_QUERY = re.compile(r"((?:^|[?&;\s])token=)[^&;\s\"']*", re.IGNORECASE)
_TOKEN_PATH = re.compile(r"(/token/)[^/?\s\"']*", re.IGNORECASE)
_BEARER = re.compile(r"(bearer\s+)[^\s\"',]+", re.IGNORECASE)


def redact(text: str) -> str:
    """`text` with every `token=` query value, `/token/<…>` path segment and bearer token replaced."""
    text = _TOKEN_QUERY.sub(r"\1[redacted]", text)
    text = _TOKEN_PATH.sub(r"\1[redacted]", text)
    return _BEARER.sub(r"\1[redacted]", text)


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
