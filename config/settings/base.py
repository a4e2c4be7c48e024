from pathlib import Path

import dj_database_url

from core.env import env_bool, env_float, env_int, env_str

BASE_DIR = Path(__file__).resolve().parent.parent.parent
# Runtime files of the embedded default (SQLite file, local blob store).
VAR_DIR = Path(env_str("PROMPTYARD_VAR_DIR", str(BASE_DIR / "var")))

# PROMPTYARD_EMBEDDED: set by scripts/run.sh only (the embedded default on one
# machine, for one local user). It is the one place that runs without SECRET_KEY
# and creates the demo user.
EMBEDDED = env_bool("PROMPTYARD_EMBEDDED", False)
# DEBUG: off unless asked for (tracebacks and settings on error pages).
DEBUG = env_bool("DEBUG", False)
# SECRET_KEY: required everywhere but the embedded default, where a random key is
# made once and kept in VAR_DIR/secret_key (never a public string). Missing, it
# stays empty: servers and workers refuse to start naming it (core/startup.py)
# and Django refuses any use of it.
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY and EMBEDDED:
    from core.startup import embedded_secret_key

    SECRET_KEY = embedded_secret_key(VAR_DIR / "secret_key")
# SECRET_KEY_FALLBACKS: former keys (comma-separated), still accepted when checking
# what they signed (sessions, upload handles, signed URLs) while a new SECRET_KEY
# rolls out; drop them once what they signed has expired (docs/operations.md,
# "Rotating keys").
SECRET_KEY_FALLBACKS = [k for k in env_str("SECRET_KEY_FALLBACKS").split(",") if k]
ALLOWED_HOSTS = env_str("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver,[::1]").split(",")
CSRF_TRUSTED_ORIGINS = [o for o in env_str("CSRF_TRUSTED_ORIGINS").split(",") if o]

# TRUSTED_PROXIES: addresses or networks (comma-separated, e.g. "10.0.0.0/8")
# of the load balancers in front of the servers. From those only, X-Forwarded-For
# names the client (core/clientip.py): for share-link, login and signup limits
# and the audit log. Unset, the peer address is the client.
TRUSTED_PROXIES = [p.strip() for p in env_str("TRUSTED_PROXIES").split(",") if p.strip()]

# METRICS_TOKEN: the bearer token a scraper sends for /metrics and for the
# details of /healthz (core/monitoring.py); staff sessions need none. Unset,
# only staff read them.
METRICS_TOKEN = env_str("METRICS_TOKEN")

# HTTPS. SECURE_HTTPS turns on the lot, and is on by default when DEBUG is off
# (but for the embedded default, plain http on this machine): redirect http to
# https, secure cookies, HSTS. Each setting can be changed on its own.
SECURE_HTTPS = env_bool("SECURE_HTTPS", not DEBUG and not EMBEDDED)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", SECURE_HTTPS)
# Health checks and scrapes of the load balancer may come over plain http.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", SECURE_HTTPS)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", SECURE_HTTPS)
# HSTS: a year by default with HTTPS; SECURE_HSTS_PRELOAD only once the domain
# is meant to go on browsers' preload lists.
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000 if SECURE_HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", SECURE_HTTPS)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# SECURE_PROXY_SSL_HEADER: "X-Forwarded-Proto,https" when a proxy that sets (and
# strips from clients) that header terminates TLS; unset, none is trusted.
_proxy_ssl = env_str("SECURE_PROXY_SSL_HEADER")
if _proxy_ssl:
    _header, _, _value = _proxy_ssl.partition(",")
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _header.strip().upper().replace("-", "_"), _value.strip())

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served as our static files (the CSP allows no CDN)
    "channels",
    "accounts",
    "playground",
    "sharing",
    "evals",
    "generations",
    "webhooks",
    "chat",
    "inference_client",
    "inference_worker",
    "axes",  # login throttling (config/settings/auth.py)
    "config",  # the operator's commands: doctor, procfile, stack (config/management)
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "core.middleware.ServiceUnavailableMiddleware",
    # A request id for every request (audit log, X-Request-ID header).
    "core.middleware.RequestIdMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Content-Security-Policy on every HTML page, with a per-request script nonce.
    "core.csp.ContentSecurityPolicyMiddleware",
    # Last: turns django-axes' login lockouts into 429s (config/settings/auth.py).
    "axes.middleware.AxesMiddleware",
]

# The middleware of /v1 (core/asgi.py ApiHandler): async-native only. No CSRF
# middleware: Bearer calls cannot be forged by another site, and the views
# check the CSRF token of session calls themselves.
API_MIDDLEWARE = [
    "core.middleware.ServiceUnavailableMiddleware",
    "core.middleware.RequestIdMiddleware",
    "core.middleware.SessionUserMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# DATABASE_URL: e.g. postgres://user@127.0.0.1:5432/promptyard. Unset: SQLite.
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"),
    )
}
if DATABASES["default"]["ENGINE"].endswith("postgresql"):
    # A connection pool per process (psycopg_pool). Under ASGI every request may
    # run on another thread, so per-thread persistent connections pile up until
    # PostgreSQL refuses clients; a pool bounds them. DB_POOL_MAX_SIZE: the most
    # connections one process holds. connect_timeout and the pool's timeout make
    # a down database a clear 503 within seconds instead of a hang.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        connect_timeout=3,
        pool={"min_size": 1, "max_size": env_int("DB_POOL_MAX_SIZE", 20), "timeout": 5},
    )
else:
    # Tests on the embedded default use a file as `serve` does: an in-memory test
    # database shares one cache between threads, which fails a concurrent writer at
    # once ("table is locked") instead of waiting for the lock like SQLite on a file.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}
    # Transactions take the write lock when they begin: a deferred one that read
    # first cannot wait to upgrade (SQLite fails it at once, "database is locked",
    # when another connection writes), so concurrent writers (a chat edit beside
    # an ack) queue on the busy timeout instead.
    DATABASES["default"].setdefault("OPTIONS", {}).update(transaction_mode="IMMEDIATE", timeout=20)
# Connections each event loop holds for the async hot paths (core.adb: chat sends),
# on top of Django's pool; PostgreSQL only.
DB_ASYNC_POOL_MAX_SIZE = env_int("DB_ASYNC_POOL_MAX_SIZE", 8)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# REDIS_URL: cache, rate-limit buckets, presence, channel layer, generation events.
REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 2, "SOCKET_TIMEOUT": 2},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# django-axes first: it refuses a locked-out login before any password is checked.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend",
                           "django.contrib.auth.backends.ModelBackend"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# STATIC_ROOT: only for `collectstatic` in production; unset, files are served from finders.
STATIC_ROOT = env_str("STATIC_ROOT") or None
# Serve static files from the app dirs in the embedded default (no collectstatic step).
WHITENOISE_USE_FINDERS = True

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.CursorPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "core.errors.api_exception_handler",
    # JSON bodies only, with bounded nesting (JSON_MAX_DEPTH): a form cannot carry the
    # lists, objects, nulls and booleans the API takes, so the schema offers JSON alone.
    # The views that take a file (dataset import, /v1/files) add multipart themselves.
    "DEFAULT_PARSER_CLASSES": ["core.jsonbody.BoundedJSONParser"],
    # The test client speaks as the API's clients do (a file upload says format="multipart").
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    "DEFAULT_SCHEMA_CLASS": "core.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Promptyard API",
    "DESCRIPTION": "Prompts, versions, sharing, chat and OpenAI-compatible inference.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # /api/docs from our own static files (drf-spectacular-sidecar), not a CDN:
    # it works offline and under the Content-Security-Policy (core/csp.py).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # No "valid" badge fetched from validator.swagger.io.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    # Two choice fields named "mode" (share links, dataset imports): name each set.
    "ENUM_NAME_OVERRIDES": {"ImportModeEnum": ["append", "replace"],
                            "LinkModeEnum": "sharing.models.LinkMode"},
    # Request bodies documented apart from responses: "not blank" (minLength 1) and
    # write-only fields show where they apply.
    "COMPONENT_SPLIT_REQUEST": True,
    # /v1's plain views (inference_client/openapi.py), the rules the playground's
    # services check (config/openapi.py), links from creates to what
    # they created, then every operation's refusals in the one error shape (core/openapi.py).
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums",
                             "inference_client.openapi.add_generation_operations",
                             "inference_client.openapi_runs.add_run_operations",
                             "config.openapi.add_request_rules", "core.openapi.require_bodies",
                             "core.openapi.add_links", "core.openapi.add_error_responses"],
}

# Deepest nesting of a JSON request body (/v1 and the REST API); deeper is a 400
# with code json_too_deep. Real bodies (messages, JSON schemas) stay far below it.
JSON_MAX_DEPTH = env_int("JSON_MAX_DEPTH", 64)

# Largest request body (bytes) of any HTTP route without a limit of its own below;
# a bigger one is a 413 (request_too_large) sent while the client is still sending,
# before the app reads it (core/bodylimit.py, chunked bodies included).
REQUEST_MAX_BYTES = env_int("REQUEST_MAX_BYTES", 2 * 1024 * 1024)
# The routes that take larger bodies: path pattern (whole path) -> the setting that
# bounds their request body. The first match wins; each setting has its own module.
REQUEST_BODY_LIMITS = [
    (r"/v1/(chat/completions|completions|embeddings)", "INFERENCE_MAX_BODY_BYTES"),
    (r"/v1/files", "BATCH_REQUEST_MAX_BYTES"),
    (r"/api/datasets/[^/]+/(import|versions)", "EVAL_DATASET_REQUEST_MAX_BYTES"),
    (r"/api/prompts/[^/]+/versions", "PROMPT_VERSION_REQUEST_MAX_BYTES"),
    (r"/api/prompts/import", "PROMPT_IMPORT_MAX_BYTES"),
    (r"/api/prompts/blobs/local/[^/]+", "PROMPT_BODY_MAX_BYTES"),  # the embedded store's upload PUT
]

# API keys: how often last_used_at may be written (seconds); avoids a write per request.
API_KEY_LAST_USED_RESOLUTION = 60

LOG_LEVEL = env_str("LOG_LEVEL", "INFO").upper()
# uvicorn's access log: a formatted line per request written on the event loop,
# 0.4 ms of the gateway's 8 ms overhead at one connection (bench/overhead.py).
# Requests are accounted for without it (usage records, /metrics, X-Request-Id).
ACCESS_LOG = env_bool("ACCESS_LOG", False)
# The HTTP protocol `serve` gives uvicorn: httptools', refusing a remembered key from the
# request's headers (config/http.py). With the access log on, uvicorn's own, which logs
# every answer.
SERVE_HTTP_PROTOCOL = "config.http.GatedHttpToolsProtocol"
# Seconds a stopping `serve` lets in-flight requests and streams run before it ends
# what is left with a terminal server_shutting_down error; a stopping job worker
# waits as long for its drivers to let their leases go (core/shutdown.py).
SHUTDOWN_GRACE_S = env_float("SHUTDOWN_GRACE_S", 20.0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    # httpx logs every request at INFO, presigned URLs (bearer credentials) included.
    "loggers": {"httpx": {"level": "WARNING"}},
}
