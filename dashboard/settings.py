"""Django settings for ctrlscope.

The embedded default needs nothing installed: SQLite beside the project and the in-memory channel
layer (one process). Everything secret or machine-specific comes from the environment.
"""

from __future__ import annotations

import fnmatch
import os
import re
import secrets
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

BASE_DIR = Path(__file__).resolve().parent.parent
# Secrets generated once and kept out of git (.gitignore), unless the environment gives them.
STATE_DIR = Path(os.environ.get("CTRLSCOPE_STATE_DIR", BASE_DIR / ".ctrlscope"))


def _secret(env: str, filename: str, nbytes: int) -> str:
    value = os.environ.get(env)
    if value:
        return value
    path = STATE_DIR / filename
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        value = secrets.token_urlsafe(nbytes)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(value + "\n")
        return value


SECRET_KEY = _secret("CTRLSCOPE_SECRET_KEY", "secret_key", 50)
# The dashboard's access token: required to control anything, and the Kubernetes API's bearer token.
# At least MIN_TOKEN_LENGTH characters (the generated one has 32): every command that loads these
# settings (the server, `manage.py url`, `manage.py kubeconfig` ...) refuses a weak one at start.
MIN_TOKEN_LENGTH = 16


def _token() -> str:
    if os.environ.get("CTRLSCOPE_TOKEN") == "":
        problem = "CTRLSCOPE_TOKEN is set but empty"
    else:
        token = _secret("CTRLSCOPE_TOKEN", "token", 24)
        if len(token) >= MIN_TOKEN_LENGTH:
            return token
        where = "CTRLSCOPE_TOKEN" if os.environ.get("CTRLSCOPE_TOKEN") else f"the token file {STATE_DIR / 'token'}"
        problem = f"{where} holds a token of {len(token)} characters"
    sys.stderr.write(
        f"ctrlscope: weak access token: {problem}; use at least {MIN_TOKEN_LENGTH} random characters "
        "(or unset CTRLSCOPE_TOKEN and delete the token file to get a generated one)\n"
    )
    raise SystemExit(2)


CTRLSCOPE_TOKEN = _token()
# Request bodies above this many bytes are refused with 413 before they are read.
CTRLSCOPE_MAX_BODY = int(os.environ.get("CTRLSCOPE_MAX_BODY", 4 * 1024 * 1024))
DEBUG = os.environ.get("CTRLSCOPE_DEBUG", "0") == "1"
# The simulation started with the server, running at 1x: a library id or a scenario file (set by
# whoever runs the server; "" starts none). Pages never take a path from a request.
CTRLSCOPE_START = os.environ.get("CTRLSCOPE_START", "demo")
# The directory whose kopf modules an uploaded scenario's `operators:` may run (docs/operators.md):
# set by whoever runs the server, since an operator is code the server imports and runs. Unset,
# an uploaded scenario with operators is refused (CTRLSCOPE_START is the server's own: it may).
CTRLSCOPE_OPERATOR_DIR = os.environ.get("CTRLSCOPE_OPERATOR_DIR", "") or None
ALLOWED_HOSTS = os.environ.get("CTRLSCOPE_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",")

INSTALLED_APPS = [
    "daphne",  # first: its runserver serves HTTP and websockets
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sessions",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "csp",
    "dashboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "dashboard.access.InstanceCookies",  # outside the two that read and write the cookies
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # After the middlewares that mark answers: its redirect and 403 carry their headers too.
    "dashboard.access.TokenMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "dashboard.urls"
ASGI_APPLICATION = "dashboard.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
            ],
        },
    },
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("CTRLSCOPE_DB_PATH", str(BASE_DIR / "db.sqlite3")),
        "TEST": {"NAME": str(BASE_DIR / "test-db.sqlite3")},
        # Recordings are written through while sessions run (docs/time-travel.md): WAL lets the
        # pages read while the host writes, and a commit survives `kill -9` of the server
        # (synchronous=NORMAL risks only the last commits on a power loss). IMMEDIATE: a writing
        # transaction takes the write lock at BEGIN, waiting up to `timeout` s, never failing halfway.
        "OPTIONS": {
            "init_command": "PRAGMA journal_mode=WAL;PRAGMA synchronous=NORMAL",
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
        },
    }
}

# Several Daphne processes (or hosts) serving one set of simulations: a shared database for the
# registry of running simulations and Redis for the channel layer. Each simulation stays in the
# process that started it; viewers and commands reach it from any process.
#   CTRLSCOPE_DB_URL=postgres://user@127.0.0.1:5432/ctrlscope   (default: SQLite beside the project)
#   CTRLSCOPE_REDIS_URL=redis://127.0.0.1:6379/0                  (default: in-memory, one process)
if os.environ.get("CTRLSCOPE_DB_URL"):
    _db = urlsplit(os.environ["CTRLSCOPE_DB_URL"])
    if _db.scheme not in ("postgres", "postgresql"):
        raise ValueError("CTRLSCOPE_DB_URL: only postgres://user[:password]@host[:port]/name is supported")
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": _db.path.lstrip("/"),
            "USER": unquote(_db.username or ""),
            "PASSWORD": unquote(_db.password or ""),
            "HOST": _db.hostname or "",
            "PORT": str(_db.port or ""),
        }
    }

# In memory, a Kubernetes watch's channel (dashboard.k8s.api.WATCHER_CHANNEL) holds 16 messages
# (of at most 64 KiB), not the layer's 100: what does not fit waits in the host's backlog, which
# keeps it as long as it must (at most 2 MiB, then 410), while the layer drops what waits in a
# channel longer than its expiry (60 s). A shallow channel keeps a slow reader's wait short and
# its messages big (the backlog joins lines up to 64 KiB a message). (channels_redis serves all
# of a process's channels from one queue of the default prefix: there, a watch has no channel
# of its own to size.)
WATCHER_CHANNEL_CAPACITY = {"ctrlscope.watcher.*": 16}
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels.layers.InMemoryChannelLayer",
        # Compiled: channels 4.3's in-memory layer uses `channel_capacity` as it is given
        # (channels_redis compiles its globs itself).
        "CONFIG": {
            "channel_capacity": [(re.compile(fnmatch.translate(g)), n) for g, n in WATCHER_CHANNEL_CAPACITY.items()]
        },
    }
}
if os.environ.get("CTRLSCOPE_REDIS_URL"):
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                # A read timeout above the layer's 5 s blocking pop: redis-py's default (5 s)
                # made every idle receive end in a TimeoutError.
                "hosts": [{"address": os.environ["CTRLSCOPE_REDIS_URL"], "socket_timeout": 15}],
                "prefix": os.environ.get("CTRLSCOPE_REDIS_PREFIX", "ctrlscope"),
                "capacity": 200,
                "expiry": 30,
            },
        }
    }

# Signed-cookie sessions: the only thing kept is the fingerprint of the token the session was
# opened with (dashboard.access), and the websocket reads it without a database query. Strict:
# no other site's link or form carries the cookie (a link from elsewhere opens read-only until
# the page is reloaded).
#
# These names are the ones the session and CSRF middlewares use; on the wire each carries the port
# the page was served from (`dashboard.access.InstanceCookies`: `ctrlscope_session_8000`), so two
# servers on two ports of one host do not overwrite each other's cookies. A session lasts 12 hours
# from the moment the token link was opened: a working day, after which the URL the run command
# printed opens it again (a signed cookie is checked against its signing time). The cookie is
# sent to every port of the host, so this also bounds how long a copy received elsewhere (by a
# server on another port that the browser visits) is worth anything (docs/security.md).
SESSION_ENGINE = "django.contrib.sessions.backends.signed_cookies"
SESSION_COOKIE_NAME = "ctrlscope_session"
SESSION_COOKIE_AGE = 12 * 60 * 60
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Strict"
CSRF_COOKIE_NAME = "ctrlscope_csrf"
CSRF_COOKIE_SAMESITE = "Strict"
CSRF_FAILURE_VIEW = "dashboard.views.csrf_failure"  # our error page: Django's has an inline style

# No script but our own files in our origin, no foreign source of anything (every asset is
# vendored), nobody frames the pages. The websocket is 'self' (CSP3: ws:/wss: of the same host
# and port). Images: the canvases draw; `data:` is the empty favicon.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    }
}
# Django's SecurityMiddleware and clickjacking middleware: the headers that make sense on plain
# http://127.0.0.1 (HSTS and the SSL redirect would not).
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
DATA_UPLOAD_MAX_MEMORY_SIZE = CTRLSCOPE_MAX_BODY
FILE_UPLOAD_MAX_MEMORY_SIZE = CTRLSCOPE_MAX_BODY

# Every record goes through one handler that redacts the access token (`token=` values,
# `/token/<...>` path segments, bearer tokens): Django's request warnings print paths, and the
# server (dashboard.serve) takes over Daphne's root handler here.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"redact": {"()": "dashboard.redact.RedactTokens"}},
    "formatters": {"plain": {"format": "%(asctime)-15s %(levelname)-8s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["redact"], "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": "INFO"},
    "loggers": {
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        "dashboard": {"level": "INFO"},
    },
}

USE_TZ = True
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en-us"

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Only for `manage.py collectstatic` when deploying behind another server: an unset or missing
# STATIC_ROOT would otherwise make WhiteNoise warn on every start about a folder nobody needs.
STATIC_ROOT = os.environ.get("CTRLSCOPE_STATIC_ROOT") or None
# A local tool: WhiteNoise serves straight from the app and project static folders, so the page
# works without a collectstatic step (and offline: every asset is vendored, no CDN).
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
