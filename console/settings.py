"""Antidote's settings.

Every setting comes from the environment through the small helpers below. Each helper refuses a
value it does not understand with ImproperlyConfigured, so a typo fails the process at start
instead of surfacing later as odd behaviour. Without any variable set, the product runs on
embedded defaults: SQLite, a lake folder under ./var, local Spark and kombu's filesystem broker.
"""

import ipaddress
import itertools
import os
import secrets
import sys
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlparse

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from workers.outbound.addresses import AllowanceError, allowance_parse

BASE_DIR = Path(__file__).resolve().parent.parent


def envbool(name, default):
    value = os.environ.get(name, default)
    if value in ("True", "true", "1", "yes", "on"):
        return True
    if value in ("False", "false", "0", "no", "off", ""):
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false/1/0), not {value!r}")


def envint(name, default, *, minimum=None):
    value = os.environ.get(name, default)
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ImproperlyConfigured(f"{name} must be an integer, not {value!r}") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, not {number}")
    return number


def envpath(name, default):
    return Path(os.environ.get(name, default)).expanduser().resolve()


def envchoice(name, default, *, prefixes):
    value = os.environ.get(name, default)
    if value and not value.startswith(prefixes):
        raise ImproperlyConfigured(
            f"{name} must start with one of {', '.join(prefixes)}, not {value!r}"
        )
    return value


def envoneof(name, default, *, choices):
    value = os.environ.get(name, default)
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return value


VAR_DIR = envpath("VAR_DIR", BASE_DIR / "var")
DEBUG = envbool("DEBUG", "false")


def _key(name, filename):
    """The secret `name` from the environment or, in embedded mode only, a key made once per
    checkout and kept in VAR_DIR/`filename`, beside the data it protects. Production sets it;
    check --deploy refuses (SECRET_KEY) or warns about (AUDIT_KEY) one from the file."""
    key = os.environ.get(name)
    if key:
        return key
    keyfile = VAR_DIR / filename
    if not keyfile.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        keyfile.write_text(secrets.token_urlsafe(50))
        keyfile.chmod(0o600)
    return keyfile.read_text().strip()


SECRET_KEY = _key("SECRET_KEY", "secret_key")
# The key of the audit chain's HMACs and of its checkpoint files, kept away from the database: a
# key in the database would let whoever writes there re-sign the chain. After a rotation, the
# keys used before (comma-separated) still verify the entries and files they signed; nothing new
# uses them.
AUDIT_KEY = _key("AUDIT_KEY", "audit_key")
AUDIT_KEYS_OLD = [k for k in os.environ.get("AUDIT_KEYS_OLD", "").split(",") if k]
ALLOWED_HOSTS = [h for h in os.environ.get("ALLOWED_HOSTS", "localhost,127.0.0.1").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "axes",
    "rest_framework",
    # For its code: its model is swapped for accounts.ApiToken (KNOX_TOKEN_MODEL).
    "knox",
    "console.accounts",
    "console.access",
    "console.lake",
    "console.queues",
    "console.ingest",
    "console.delivery",
    "console.readmodels",
    "console.browse",
    "console.audit",
    "console.decisions",
    "console.lakequery",
    "console.retention",
    "console.runs",
    "console.processes",
    "console.notes",
    "console.rules",
    "console.alerts",
    "console.sso",
    "csp",
    "drf_spectacular",
    "drf_spectacular_sidecar",
]

MIDDLEWARE = [
    # First: every answer carries its request's id, and every log line of the request too.
    "console.requestid.RequestId",
    "django.middleware.security.SecurityMiddleware",
    # A database connection before anything else needs one: 503, not 500, when none comes.
    "console.dbpool.ConnectionFirst",
    # One line at INFO for each refused request (401, 403, 404, 405, 429): who, what, why.
    "console.refusals.RefusalLog",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # A page's polling does not keep a session alive (console/sessions.py).
    "console.sessions.PollsAreNotActivity",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Who is acting, for the writes that record it from a signal (console.access).
    "console.access.actor.ActorMiddleware",
    # A session signed in with OpenID Connect asks the provider again now and then (console.sso).
    "console.sso.middleware.ProviderRecheck",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Inside it: forms may lead to the sign-in provider's sign-out page (console.sso).
    "console.sso.middleware.ProviderFormAction",
    # Last, as django-axes asks: it turns a login it refused into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "console.urls"
WSGI_APPLICATION = "console.wsgi.application"

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
                "console.decisions.context_processors.requests_waiting",
                "console.context_processors.live",
                "console.alerts.context_processors.bell",
            ],
            # {{ value|when }} on every screen (console/browse/templatetags/when.py), and
            # {{ text|shown }} for text people or messages wrote (console/textshown.py).
            "builtins": ["console.browse.templatetags.when", "console.textshown"],
        },
    },
]

# --- Console database --------------------------------------------------------------------------

_default_db = f"sqlite:///{VAR_DIR / 'console.sqlite3'}"
_db_url = envchoice(
    "DATABASE_URL", _default_db, prefixes=("sqlite://", "postgres://", "postgresql://")
)
# No connection outlives its request or task (CONN_MAX_AGE 0): on PostgreSQL, closing one gives
# it back to the process's pool below, which Django requires for pooling anyway.
DATABASES = {"default": dj_database_url.parse(_db_url, conn_max_age=0)}

# On PostgreSQL each process holds at most DB_POOL_MAX connections, whatever its thread count: a
# thread waits up to DB_POOL_TIMEOUT seconds for one, then gets an OperationalError (the web
# answers 503, console/dbpool.py). Per process, so the whole deployment holds at most
# processes x DB_POOL_MAX, to keep under PostgreSQL's max_connections (100 by default, 3 of
# them kept for superusers): 10 makes 50 for the five processes of the Procfile, with room for
# more web processes, manage.py commands and psql. 10 also covers the spark worker's 4 threads,
# each holding one connection for its task and one for a decision's read-ahead thread; heartbeats
# take one only for the moment of a beat (console/leases.py). The rule, for any threaded
# process: DB_POOL_MAX at least twice its concurrency, plus one or two for heartbeats; never at
# most its concurrency, or tasks that wait on a helper thread would wait for each other.
DB_POOL_MAX = envint("DB_POOL_MAX", 10, minimum=1)
DB_POOL_MIN = envint("DB_POOL_MIN", 1, minimum=0)
if DB_POOL_MIN > DB_POOL_MAX:
    raise ImproperlyConfigured(
        f"DB_POOL_MIN ({DB_POOL_MIN}) must not be more than DB_POOL_MAX ({DB_POOL_MAX})"
    )
DB_POOL_TIMEOUT = envint("DB_POOL_TIMEOUT", 10, minimum=1)


def _process_name(argv):
    """What this process is, for operators reading pg_stat_activity: the process names of the
    Procfile and docs/getting-started.md (web, spark-worker, worker, beat, consumer), else the
    command."""
    path = Path(argv[0]) if argv and argv[0] else Path("python")
    program = path.parent.name if path.name == "__main__.py" else path.stem
    args = argv[1:]
    if program == "manage" and args:
        consumers = {"consume_sources": "consumer", "consume_rabbitmq": "consumer"}
        return {"runserver": "web", **consumers}.get(args[0], args[0])
    if program == "gunicorn":
        return "web"
    if program == "celery" and "beat" in args:
        return "beat"
    if program == "celery" and "worker" in args:
        queues = [q for a, q in itertools.pairwise(args) if a in ("-Q", "--queues")]
        queues += [a.partition("=")[2] for a in args if a.startswith("--queues=")]
        return "spark-worker" if "spark" in ",".join(queues).split(",") else "worker"
    return program if program.isidentifier() else "python"


# What this process is: in its database connections' name and in its JSON log lines.
PROCESS_NAME = _process_name(sys.argv)
DB_APPLICATION_NAME = os.environ.get("DB_APPLICATION_NAME") or f"antidote-{PROCESS_NAME}"

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web process read while a worker commits; the timeout rides out short locks.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        # A 64 MiB page cache: bulk decisions update thousands of index rows per chunk.
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
        "PRAGMA cache_size=-65536;",
        "transaction_mode": "IMMEDIATE",
    }
    # A file, not memory: tests start real workers that must see the same database.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-console.sqlite3")}
else:
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    # One named in DATABASE_URL (?application_name=) wins.
    _options.setdefault("application_name", DB_APPLICATION_NAME)
    _options["pool"] = {
        "min_size": DB_POOL_MIN,
        "max_size": DB_POOL_MAX,
        "timeout": DB_POOL_TIMEOUT,
        "name": _options["application_name"],
    }
    # The pool checks a connection before handing it out: one PostgreSQL dropped while it sat
    # idle (a restart, a failover) is replaced instead of failing the request that gets it.
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = envpath("STATIC_ROOT", VAR_DIR / "staticfiles")
# The web process serves /static/ itself, from the apps' and static/'s folders, without DEBUG:
# `make run` sets it, so that the demo shows the console's own 404 and 500 pages, not Django's
# debug pages, and still has its style sheets and scripts. Production leaves it off and serves
# `collectstatic`'s folder from the proxy.
SERVE_STATIC = envbool("SERVE_STATIC", "false")

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

# Sessions end after SESSION_HOURS without a request, and when the browser closes.
SESSION_COOKIE_AGE = envint("SESSION_HOURS", 8, minimum=1) * 3600
SESSION_SAVE_EVERY_REQUEST = True
SESSION_EXPIRE_AT_BROWSER_CLOSE = True
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"

# Behind HTTPS (production): secure cookies, redirect to HTTPS, HSTS. Off for the embedded
# default, which serves plain HTTP on localhost.
HTTPS = envbool("HTTPS", "false")
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_SSL_REDIRECT = HTTPS
# Probes ask for these over plain HTTP, from inside the host or the cluster (console.processes),
# and so does a Prometheus on the host (console.metrics).
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 31536000 if HTTPS else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", "false")
if envbool("BEHIND_PROXY", "false"):
    # Only when a proxy we trust sets it; otherwise a client could claim HTTPS.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Every page is built from attacker-controlled data (bodies, headers, reasons): no inline script or
# style may run, so nothing the data smuggles in can either. Scripts and styles are local files.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    },
}

# --- Failed logins and API rates ----------------------------------------------------------------

# How many reverse proxies in front of the console append to X-Forwarded-For: the client's address
# is that many entries from its right. 0: REMOTE_ADDR, and X-Forwarded-For, which any client can
# write, is ignored. Lockouts and anonymous API rates count by this address.
TRUSTED_PROXY_COUNT = envint("TRUSTED_PROXY_COUNT", 0, minimum=0)


def envnetworks(name, default):
    """Comma-separated addresses or networks (`10.0.0.0/8`, `::1`)."""
    networks = []
    for item in os.environ.get(name, default).split(","):
        if item.strip():
            try:
                networks.append(ipaddress.ip_network(item.strip(), strict=False))
            except ValueError:
                raise ImproperlyConfigured(
                    f"{name} must list IP addresses or networks, not {item.strip()!r}"
                ) from None
    return networks


# /metrics (console.metrics) answers the client addresses (as lockouts see them: client_ip) in
# these networks, and anyone with `Authorization: Bearer <METRICS_TOKEN>`; unset, no token works.
METRICS_ALLOWED_IPS = envnetworks("METRICS_ALLOWED_IPS", "127.0.0.1,::1")
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "")

# django-axes: LOGIN_FAILURE_LIMIT failed logins for one user name from one address lock that pair
# out for LOGIN_LOCKOUT_MINUTES after the last one, or until an administrator lifts it
# (/lockouts/). The counts are in the database, shared by every process.
AUTHENTICATION_BACKENDS = [
    "console.accounts.lockouts.backends.LockoutBackend",
    # Django's password check, refused to all but LOCAL_PASSWORD_USERS when LOCAL_PASSWORDS is off.
    "console.sso.backends.LocalPasswordBackend",
]
# Axes' database handler, with the address throttle on top.
AXES_HANDLER = "console.accounts.lockouts.backends.LockoutHandler"
AXES_FAILURE_LIMIT = envint("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=envint("LOGIN_LOCKOUT_MINUTES", 30, minimum=1))
# The pair only: a lockout by name alone, or by address alone, is one anyone can aim at others
# (fail five times on a colleague's name; or on made-up names, from an office's shared address).
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# An address that failed this many logins inside LOGIN_LOCKOUT_MINUTES, whatever the names, is
# slowed down, never locked out: each attempt from it waits after the previous one, 2 s doubling
# with each further failure, at most LOGIN_ADDRESS_DELAY_MAX_SECONDS; then it is checked as usual.
LOGIN_ADDRESS_LIMIT = envint("LOGIN_ADDRESS_LIMIT", 20, minimum=1)
LOGIN_ADDRESS_DELAY_MAX_SECONDS = envint("LOGIN_ADDRESS_DELAY_MAX_SECONDS", 60, minimum=1)
# Not axes' reset on success: it forgets every failure from the address too, so one valid account
# would reset the count of guesses at another's password. console.accounts.receivers forgets only
# the user's own failures from that address.
AXES_RESET_ON_SUCCESS = False
# Logins are in the audit trail already: no second copy of each in axes' own log, kept forever.
AXES_DISABLE_ACCESS_LOG = True
AXES_CLIENT_IP_CALLABLE = "console.accounts.lockouts.backends.client_ip"
AXES_LOCKOUT_CALLABLE = "console.accounts.lockouts.views.lockout_page"

# Signing in with the company's identity (console.sso, docs/guides/sign-in.md). OpenID Connect is
# on when OIDC_ISSUER is set: the provider's metadata is read from its
# /.well-known/openid-configuration; the client's id and secret are the provider's for this site.
OIDC_ISSUER = os.environ.get("OIDC_ISSUER", "").rstrip("/")
OIDC_CLIENT_ID = os.environ.get("OIDC_CLIENT_ID", "")
OIDC_CLIENT_SECRET = os.environ.get("OIDC_CLIENT_SECRET", "")
# "Sign in with <name>" on the login page.
OIDC_PROVIDER_NAME = os.environ.get("OIDC_PROVIDER_NAME", "single sign-on")
OIDC_SCOPES = os.environ.get("OIDC_SCOPES", "openid email profile groups")
# The ID token's claim that lists the person's groups, and the one that names their account here.
OIDC_GROUPS_CLAIM = os.environ.get("OIDC_GROUPS_CLAIM", "groups")
OIDC_USERNAME_CLAIM = os.environ.get("OIDC_USERNAME_CLAIM", "preferred_username")
# How often a signed-in session asks the provider again (its refresh token): a person the provider
# refuses is signed out and deactivated, a change of groups takes effect.
OIDC_RECHECK_MINUTES = envint("OIDC_RECHECK_MINUTES", 15, minimum=1)
# Clock skew allowed on an ID token's times, in seconds.
OIDC_LEEWAY_SECONDS = envint("OIDC_LEEWAY_SECONDS", 60, minimum=0)
OIDC_TIMEOUT_SECONDS = envint("OIDC_TIMEOUT_SECONDS", 10, minimum=1)
# The provider groups that give Antidote's roles, as code (YAML, like the queues): read at every
# sign-in. Unset, no group gives a role and every provider sign-in is refused.
SSO_GROUP_ROLES = os.environ.get("SSO_GROUP_ROLES", "")
# A group that gives a role which grows a person's rights waits for an administrator's
# confirmation the first time (R19), unless the organisation trusts its provider's groups.
SSO_TRUST_PRIVILEGED_GROUPS = envbool("SSO_TRUST_PRIVILEGED_GROUPS", "false")
# LDAP or Active Directory (console.sso.directory, django-auth-ldap; requirements-ldap.txt): on
# when LDAP_SERVER_URI is set. Antidote binds as LDAP_BIND_DN to find the person, then as the
# person to check their password, over STARTTLS unless told otherwise (or with ldaps://).
LDAP_SERVER_URI = os.environ.get("LDAP_SERVER_URI", "")
LDAP_START_TLS = envbool("LDAP_START_TLS", "true")
LDAP_CA_FILE = os.environ.get("LDAP_CA_FILE", "")
LDAP_BIND_DN = os.environ.get("LDAP_BIND_DN", "")
LDAP_BIND_PASSWORD = os.environ.get("LDAP_BIND_PASSWORD", "")
LDAP_USER_SEARCH_BASE = os.environ.get("LDAP_USER_SEARCH_BASE", "")
LDAP_USER_FILTER = os.environ.get("LDAP_USER_FILTER", "(uid=%(user)s)")
LDAP_GROUP_SEARCH_BASE = os.environ.get("LDAP_GROUP_SEARCH_BASE", "")
LDAP_GROUP_TYPE = envoneof(
    "LDAP_GROUP_TYPE",
    "groupOfNames",
    choices=(
        "groupOfNames",
        "nestedGroupOfNames",
        "groupOfUniqueNames",
        "posixGroup",
        "activeDirectory",
        "nestedActiveDirectory",
    ),
)
LDAP_TIMEOUT_SECONDS = envint("LDAP_TIMEOUT_SECONDS", 10, minimum=1)
# How often beat looks each LDAP account up in the directory: one whose entry is gone is
# deactivated.
LDAP_CHECK_MINUTES = envint("LDAP_CHECK_MINUTES", 60, minimum=1)
if LDAP_SERVER_URI:
    AUTHENTICATION_BACKENDS.append("console.sso.directory.DirectoryBackend")
# Local passwords for everyone (the default), or, off, only for the break-glass accounts named.
LOCAL_PASSWORDS = envbool("LOCAL_PASSWORDS", "true")
LOCAL_PASSWORD_USERS = [
    name.strip() for name in os.environ.get("LOCAL_PASSWORD_USERS", "").split(",") if name.strip()
]


def envrate(name, default):
    value = os.environ.get(name, default)
    number, _, period = value.partition("/")
    periods = ("s", "sec", "m", "min", "h", "hour", "d", "day")
    if not (number.isdigit() and int(number) > 0 and period in periods):
        raise ImproperlyConfigured(f"{name} must be a rate such as 600/min, not {value!r}")
    return value


# API calls per token (per user on a session, per address for anonymous calls), counted in the
# default cache: per process unless CACHES is shared (console.throttles).
API_THROTTLE_RATE = envrate("API_THROTTLE_RATE", "600/min")
API_ANON_THROTTLE_RATE = envrate("API_ANON_THROTTLE_RATE", "60/min")

REST_FRAMEWORK = {
    # Token first: its WWW-Authenticate challenge makes an anonymous call a 401, not a 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "console.accounts.tokens.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_THROTTLE_CLASSES": [
        "console.throttles.CallerRateThrottle",
        "console.throttles.AnonymousRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {"caller": API_THROTTLE_RATE, "anonymous": API_ANON_THROTTLE_RATE},
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # DRF's three, with a JSON parser that answers JSON nested too deeply with a 400, not a 500.
    "DEFAULT_PARSER_CLASSES": [
        "console.api.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Refusals in words, in the shape the schema documents (405 names the methods, 403 the roles).
    "EXCEPTION_HANDLER": "console.api.exception_handler",
}

# The OpenAPI document at /api/schema/ and its docs page at /api/docs/. Like every page but the
# login page, both need a signed-in user. Relative paths (no SERVERS): the schema is served by the
# console it describes, so its operations resolve against wherever it was fetched from.
SPECTACULAR_SETTINGS = {
    "TITLE": "Antidote API",
    "DESCRIPTION": (
        "The API of Antidote, the quarantine console for poison messages. Authenticate with "
        "`Authorization: Token <key>`, or with the console's session cookie and, on writes, its "
        "CSRF token."
    ),
    "VERSION": "1.0.0",
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # The whole API whoever asks, not only what the caller may use: one document for every client.
    "SERVE_PUBLIC": True,
    "SERVE_INCLUDE_SCHEMA": False,
    # Operations are tagged by what follows the prefix: groups, index, messages, queues, stats.
    "SCHEMA_PATH_PREFIX": r"/api/v[0-9]+",
    # Input and output shapes differ (read-only and write-only fields): one component each.
    "COMPONENT_SPLIT_REQUEST": True,
    # The console works offline: Swagger UI and Redoc from our static files, never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Choice sets that several fields share (or whose field names collide) get one name each.
    "ENUM_NAME_OVERRIDES": {
        "RequestStatusEnum": "console.decisions.models.ActionRequest.STATUSES",
        "AlertEventEnum": "console.alerts.events.KINDS",
        "ProcessKindEnum": "console.processes.models.KINDS",
        "GroupStateEnum": "console.notes.lifecycle.STATE_NAMES",
        "StandingRuleStatusEnum": "console.rules.models.StandingRule.STATUSES",
        "StandingRuleKindEnum": "console.rules.models.KINDS",
    },
    # Then the getting-started introduction, and the 429 every operation may answer.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "console.openapi.schema_postprocess",
    ],
}

# --- API tokens (console.accounts.tokens) --------------------------------------------------------

# A token is good for API_TOKEN_DAYS unless made shorter, and using it does not make it last
# longer. Only its SHA-512 digest is stored; the token is shown once, when it is made.
API_TOKEN_DAYS = envint("API_TOKEN_DAYS", 90, minimum=1)
if API_TOKEN_DAYS > 365:
    # The longest a token may be made for (console.accounts.tokens.selectors.DAYS_MAX).
    raise ImproperlyConfigured(f"API_TOKEN_DAYS must be at most 365, not {API_TOKEN_DAYS}")
KNOX_TOKEN_MODEL = "accounts.ApiToken"  # noqa: S105 - a model's name, not a secret
# knox's migrations would make a table for its own token model, which ours replaces: an empty
# table whose key to auth_user stops PostgreSQL emptying that one (a test's flush). None at all.
MIGRATION_MODULES = {"knox": None}
REST_KNOX = {
    "TOKEN_TTL": timedelta(days=API_TOKEN_DAYS),
    # The header the clients have always sent: `Authorization: Token <key>`.
    "AUTH_HEADER_PREFIX": "Token",
    "AUTO_REFRESH": False,
    "SECURE_HASH_ALGORITHM": "hashlib.sha512",
}

# --- The lake and Spark --------------------------------------------------------------------------

LAKE_URI = str(envpath("LAKE_URI", VAR_DIR / "lake"))
# Signed copies of the audit chain's checkpoints, one new file each, outside the database. Unset:
# "audit-checkpoints" in the lake's folder (VAR_DIR's when the lake is not a folder), found when
# used, so that it follows LAKE_URI wherever that is set (console/audit/checkpoints.py).
AUDIT_CHECKPOINT_DIR = (
    envpath("AUDIT_CHECKPOINT_DIR", "") if os.environ.get("AUDIT_CHECKPOINT_DIR") else None
)
# Beat checkpoints the chain's head this often (when it moved since the last checkpoint).
AUDIT_CHECKPOINT_SECONDS = envint("AUDIT_CHECKPOINT_SECONDS", 3600, minimum=10)
# At least four task slots: a handler that hangs holds the slot of its queue's run until its
# timeout, and runs of other queues go on in the others (R16). Handlers mostly wait on I/O.
SPARK_MASTER = envchoice(
    "SPARK_MASTER", f"local[{max(4, os.cpu_count() or 1)}]", prefixes=("local", "spark://")
)
SPARK_REMOTE = envchoice("SPARK_REMOTE", "", prefixes=("sc://",))
SPARK_DRIVER_MEMORY = os.environ.get("SPARK_DRIVER_MEMORY", "2g")
# Options of the Spark driver's JVM (spark.driver.extraJavaOptions; the executors' too in local
# mode). `make run` sets a JVM that starts fast over one that runs long jobs fast: a demo's first
# counts wait for its start and its first jobs, most of whose CPU goes to the C2 compiler.
SPARK_DRIVER_JAVA_OPTIONS = os.environ.get("SPARK_DRIVER_JAVA_OPTIONS", "")
# A lake query's Spark jobs are cancelled after this long and the query fails, saying so: a
# person's criteria (a costly regular expression over every body) decide its cost, and it would
# otherwise hold a slot of the spark worker for as long as it likes (Celery's own time limits do
# nothing in its threads pool). No 0 for "never": that is the hole this closes. At most 3000, so
# that the query's readable reason comes before its task's own limits (lake_query_task).
LAKE_QUERY_TIMEOUT_SECONDS = envint("LAKE_QUERY_TIMEOUT_SECONDS", 600, minimum=1)
# "Why do these fail" (console.lakequery, workers.jobs.failure_traits) reads at most this many
# messages of each side, the failures and the deliveries, drawn at random above it.
WHY_FAIL_SAMPLE = envint("WHY_FAIL_SAMPLE", 100_000, minimum=100)
if LAKE_QUERY_TIMEOUT_SECONDS > 3000:
    raise ImproperlyConfigured(
        f"LAKE_QUERY_TIMEOUT_SECONDS must be at most 3000, not {LAKE_QUERY_TIMEOUT_SECONDS}"
    )

# --- Ingest --------------------------------------------------------------------------------------

MAX_BODY_BYTES = envint("MAX_BODY_BYTES", 10 * 1024 * 1024, minimum=1)
# A message's headers, limited as its body is (issue 43: 200,000 headers made its page cost
# seconds). What brokers and servers let through: Kafka and NATS count headers in the message
# (1 MiB by default, message.max.bytes and max_payload); RabbitMQ sends every property, headers
# and x-death included, in one frame (frame_max, 128 KiB by default) with table field names of at
# most 255 bytes; HTTP servers take 8 to 16 KiB of request headers (nginx, Node.js; Apache: 100
# fields), Go's net/http 1 MiB. A source stores a broker's headers twice: each one readable (x-death
# as JSON) and all of them typed in one of its own (`amqp-properties`, `nats-headers`,
# `redis-fields`), where JSON can take twice the wire's bytes. So: a value holds a full RabbitMQ
# frame as JSON (2 x 128 KiB); all of them together hold both copies of it (4 x 128 KiB, half of
# what Kafka and NATS allow a whole message); a count is ten times Apache's; a name holds AMQP's
# longest with room for the names ingest gives (`x-foreign-...`). Real dead letters carry tens of
# headers and a few KiB (x-death tables in `amqp-properties` included): far below these limits,
# which are far below a flood.
MAX_HEADER_COUNT = envint("MAX_HEADER_COUNT", 1000, minimum=1)
MAX_HEADER_NAME_BYTES = envint("MAX_HEADER_NAME_BYTES", 1024, minimum=1)
MAX_HEADER_VALUE_BYTES = envint("MAX_HEADER_VALUE_BYTES", 256 * 1024, minimum=1)
MAX_HEADERS_TOTAL_BYTES = envint("MAX_HEADERS_TOTAL_BYTES", 512 * 1024, minimum=1)
INBOX_DIR = envpath("INBOX_DIR", VAR_DIR / "inbox")
INBOX_POLL_SECONDS = envint("INBOX_POLL_SECONDS", 10, minimum=1)

# --- Delivery ------------------------------------------------------------------------------------

# An isolation batch is the unit a handler crash takes down (R8): at most this many messages.
DELIVERY_BATCH_SIZE = envint("DELIVERY_BATCH_SIZE", 5000, minimum=1)
DELIVERY_BATCH_BYTES = envint("DELIVERY_BATCH_BYTES", 64 * 1024 * 1024, minimum=1)
# A run with at most this many due messages delivers them in the worker's process with pyarrow,
# without a Spark job (workers.jobs.delivery_local): a trickle is delivered in about a second.
# 0: every run is a Spark job.
DELIVERY_LOCAL_MAX = envint("DELIVERY_LOCAL_MAX", 1000, minimum=0)
# A handler call that runs longer than this is killed and treated as a crash (R7, R10).
HANDLER_TIMEOUT_SECONDS = envint("HANDLER_TIMEOUT_SECONDS", 300, minimum=1)
DELIVERY_INTERVAL_SECONDS = envint("DELIVERY_INTERVAL_SECONDS", 15, minimum=1)
# A run whose heartbeat is older than this is treated as dead and swept (R7).
LEASE_SECONDS = envint("LEASE_SECONDS", 120, minimum=5)
HEARTBEAT_SECONDS = envint("HEARTBEAT_SECONDS", 10, minimum=1)
# Every process (web, workers, beat, the sources' consumer) beats as often too
# (console.processes); one whose last beat is older than this is shown stale, and
# `manage.py health` fails for it.
HEARTBEAT_STALE_SECONDS = envint("HEARTBEAT_STALE_SECONDS", 3 * HEARTBEAT_SECONDS, minimum=2)
if HEARTBEAT_STALE_SECONDS <= HEARTBEAT_SECONDS:
    raise ImproperlyConfigured(
        f"HEARTBEAT_STALE_SECONDS ({HEARTBEAT_STALE_SECONDS}) must be more than "
        f"HEARTBEAT_SECONDS ({HEARTBEAT_SECONDS})"
    )
SWEEP_INTERVAL_SECONDS = envint("SWEEP_INTERVAL_SECONDS", 30, minimum=1)
# Fold event commits into a new state snapshot once this many are outstanding.
COMPACT_AFTER_COMMITS = envint("COMPACT_AFTER_COMMITS", 20, minimum=1)
# Fold event commits into a new history generation once this many are outstanding: a message's
# history reads at most this many commits one by one, besides one file per generation.
HISTORY_COMPACT_AFTER_COMMITS = envint("HISTORY_COMPACT_AFTER_COMMITS", 10, minimum=1)

# --- Refresh of the read models ------------------------------------------------------------------

# Beat refreshes the console's read models this often, besides right after every lake commit
# (unless REFRESH_ON_COMMIT is off: then only on the timer).
REFRESH_INTERVAL_SECONDS = envint("REFRESH_INTERVAL_SECONDS", 30, minimum=1)
REFRESH_ON_COMMIT = envbool("REFRESH_ON_COMMIT", "true")
# The dashboard asks for its counts again this often (no reload), and says why they lag behind
# the lake when a change has waited for a refresh longer than three REFRESH_INTERVAL_SECONDS or
# STATS_STALE_SECONDS, whichever is shorter (console.browse.freshness: several missed refreshes
# mean the beat or the workers are down, or a refresh is stuck or failing).
DASHBOARD_POLL_SECONDS = envint("DASHBOARD_POLL_SECONDS", 10, minimum=1)
STATS_STALE_SECONDS = envint("STATS_STALE_SECONDS", 300, minimum=1)
# The scheduler recounts every count the console shows from the lake this often and compares
# (console.readmodels.verify); what differs is an alert, and is repaired unless this is off.
COUNTS_VERIFY_SECONDS = envint("COUNTS_VERIFY_SECONDS", 86400, minimum=60)
COUNTS_VERIFY_REPAIR = envbool("COUNTS_VERIFY_REPAIR", "true")

# --- Decisions ------------------------------------------------------------------------------------

# Who must approve (R17, console.decisions.approval): requests over this many messages need a
# second person's approval (four eyes), and so, whatever their count, do those that edit a body,
# move messages to another queue or end conversations...
APPROVAL_OVER = envint("APPROVAL_OVER", 1, minimum=0)
# ... and once a person's unapproved decisions reach this many messages in a rolling hour, their
# further requests wait for approval too (0: every request does).
APPROVAL_BUDGET = envint("APPROVAL_BUDGET", 20, minimum=0)
# An approval is good for this long; a request not started by then never runs.
APPROVAL_TTL_HOURS = envint("APPROVAL_TTL_HOURS", 24, minimum=1)
# An account created, or whose rights changed, less than this long ago cannot approve (a bulk
# request or a role grant): an account cannot be made, or promoted, and used at once.
APPROVER_COOLDOWN_HOURS = envint("APPROVER_COOLDOWN_HOURS", 24, minimum=0)
# A role grant waiting for a second administrator expires after this many days.
ROLE_GRANT_EXPIRY_DAYS = envint("ROLE_GRANT_EXPIRY_DAYS", 7, minimum=1)
# Break-glass (R17, console.decisions.break_glass), off unless an administrator turns it on:
# someone who may approve executes a pending request alone (their own too: the one on call at
# night), with a reason; every other approver and administrator is alerted at once, and someone
# else must review it within BREAK_GLASS_REVIEW_HOURS, past which the scheduler alerts (once).
BREAK_GLASS = envbool("BREAK_GLASS", "false")
BREAK_GLASS_REVIEW_HOURS = envint("BREAK_GLASS_REVIEW_HOURS", 12, minimum=1)
# The hosts a request's own redrive URL may name (console.decisions.targets): exact names, or
# "*.example.com" for its subdomains; empty, any host (each such request still waits for an
# approver, R17). Production should list its services: a URL is where message bodies go.
REDRIVE_URL_HOSTS = [
    host.strip().lower()
    for host in os.environ.get("REDRIVE_URL_HOSTS", "").split(",")
    if host.strip()
]
# Internal addresses (loopback, link-local, private...) the product may send to after all, for
# demos and tests only: `127.0.0.1:8231`, `[::1]:8231`, `127.0.0.1`, `10.20.0.0/16`. The HTTP
# sink reads the same variable from its own environment (workers.outbound, which parses both).
try:
    OUTBOUND_ALLOW_INTERNAL = allowance_parse(os.environ.get("OUTBOUND_ALLOW_INTERNAL", ""))
except AllowanceError as exc:
    raise ImproperlyConfigured(str(exc)) from None
# A canary whose messages have no delivery outcome after this long stops the request.
CANARY_TIMEOUT_SECONDS = envint("CANARY_TIMEOUT_SECONDS", 3600, minimum=10)

# --- Standing rules (console.rules) -------------------------------------------------------------

# The scheduler looks at every active archive rule this often (daily: "FAIL what stood untouched
# N days"), and at every active auto-retry rule this often (a retry's delay is counted to it).
RULES_ARCHIVE_SECONDS = envint("RULES_ARCHIVE_SECONDS", 86400, minimum=60)
RULES_RETRY_SECONDS = envint("RULES_RETRY_SECONDS", 60, minimum=5)

# --- Retention (R15) -----------------------------------------------------------------------------

# The scheduler purges the final messages past their queue's retention_days this often.
PURGE_INTERVAL_SECONDS = envint("PURGE_INTERVAL_SECONDS", 86400, minimum=60)
# A purge's old lake directories are deleted this long after it swapped them out: a delivery run
# or a query that listed them before may still be reading them.
PURGE_GRACE_SECONDS = envint("PURGE_GRACE_SECONDS", 3600, minimum=0)

# --- Alerts (console.alerts) ---------------------------------------------------------------------

# The scheduler walks the whole audit chain this often; a broken one alerts the auditors.
AUDIT_VERIFY_SECONDS = envint("AUDIT_VERIFY_SECONDS", 3600, minimum=60)
# The default worker sends what is due in the outbox this often (and at once after a commit that
# raised an alert), and looks at the watches (inflow thresholds, broker consumers) this often.
ALERTS_SEND_SECONDS = envint("ALERTS_SEND_SECONDS", 15, minimum=1)
ALERTS_WATCH_SECONDS = envint("ALERTS_WATCH_SECONDS", 60, minimum=5)
# An alert about the same thing (a queue, a group, a broker source) is raised at most once in
# this many minutes; the ones in between are counted on it.
ALERTS_DEDUPE_MINUTES = envint("ALERTS_DEDUPE_MINUTES", 60, minimum=1)
# A delivery that fails is tried again after 30 s, 1, 2, 4 ... minutes (at most an hour apart),
# up to this many attempts; then it stays failed, for an administrator to see and send again.
ALERTS_MAX_ATTEMPTS = envint("ALERTS_MAX_ATTEMPTS", 8, minimum=1)
# A worker claims a delivery for this long: killed mid-send, the delivery is due again after it.
ALERTS_CLAIM_SECONDS = envint("ALERTS_CLAIM_SECONDS", 120, minimum=10)
ALERTS_WEBHOOK_TIMEOUT_SECONDS = envint("ALERTS_WEBHOOK_TIMEOUT_SECONDS", 10, minimum=1)


def envnamelist(name, default):
    """Comma-separated names of environment variables."""
    names = [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]
    for item in names:
        plain = item.isascii() and item.replace("_", "a").isalnum() and item == item.upper()
        if not plain or item[0].isdigit():
            raise ImproperlyConfigured(
                f"{name} must list environment variables' names (capitals, digits, _), not {item!r}"
            )
    return names


# A webhook's secret (its signing secret, PagerDuty's routing key, which is sent to the webhook's
# URL) is read from a variable starting with ANTIDOTE_ALERT_, or from one listed here; never from
# one of these settings, listed or not (console.envnames).
ALERTS_SECRET_ENV_ALLOWED = envnamelist("ALERTS_SECRET_ENV_ALLOWED", "")
# Alerts older than this are forgotten by the watch, once nothing of theirs is left to send.
ALERTS_KEEP_DAYS = envint("ALERTS_KEEP_DAYS", 90, minimum=1)
# Finished delivery runs and refreshes are listed on the Runs page this long, then forgotten
# (console.runs.services): one starts every few seconds.
RUNS_KEEP_DAYS = envint("RUNS_KEEP_DAYS", 30, minimum=1)
# Links in emails and webhooks point here (the console's public address).
CONSOLE_URL = os.environ.get("CONSOLE_URL", "http://127.0.0.1:8000").rstrip("/")

# Email: Django's console backend (mail printed by the worker) unless EMAIL_HOST names an SMTP
# server.
EMAIL_HOST = os.environ.get("EMAIL_HOST", "")
EMAIL_BACKEND = (
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend"
)
EMAIL_PORT = envint("EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", "false")
EMAIL_USE_SSL = envbool("EMAIL_USE_SSL", "false")
EMAIL_TIMEOUT = envint("EMAIL_TIMEOUT", 10, minimum=1)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "antidote@localhost")

# --- Celery --------------------------------------------------------------------------------------

_broker_dir = VAR_DIR / "broker"
CELERY_BROKER_URL = envchoice(
    "CELERY_BROKER_URL",
    "filesystem://",
    prefixes=("filesystem://", "redis://", "rediss://", "amqp://", "pyamqp://", "memory://"),
)
CELERY_BROKER_TRANSPORT_OPTIONS = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    for sub in ("in", "processed", "control"):
        (_broker_dir / sub).mkdir(parents=True, exist_ok=True)
    # Kombu's filesystem transport, writing each message whole before it appears (workers.broker).
    CELERY_BROKER_TRANSPORT = "workers.broker:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "in"),
        "data_folder_out": str(_broker_dir / "in"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
CELERY_TASK_ALWAYS_EAGER = envbool("CELERY_TASK_ALWAYS_EAGER", "false")
CELERY_BEAT_SCHEDULE_FILE = str(VAR_DIR / "celerybeat-schedule")

if urlparse(CELERY_BROKER_URL).scheme in ("redis", "rediss"):
    # A task is redelivered only after this; our own sweeper does not wait for it (ARCHITECTURE).
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}

# plain: a line for people; json: one JSON object a line, for a log pipeline, with the request,
# task, run, decision, queue and message each line is about (workers.logcontext). Celery's
# worker and beat put their own handler in place of this one: it gets the same format when json
# and the same filter (workers.celery), and keeps Celery's plain lines otherwise.
LOG_FORMAT = envoneof("LOG_FORMAT", "plain", choices=("plain", "json"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "json": {"()": "workers.logcontext.JsonFormatter", "process_name": PROCESS_NAME},
    },
    "filters": {
        # Django's record of a refused request (a traceback for each 403 of a screen) is
        # dropped: console.refusals writes one line for it instead.
        "refusals": {"()": "console.refusals.DjangoRefusals"},
        "context": {"()": "workers.logcontext.LogContext"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["context"],
        }
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        # Through the root's handler only: Django's default config gives `django` a console
        # handler of its own under DEBUG, which printed each of its records twice.
        "django": {"handlers": [], "propagate": True},
        "django.request": {"filters": ["refusals"]},
        "django.security.csrf": {"filters": ["refusals"]},
        # pika logs every step of every AMQP connection at INFO.
        "py4j": {"level": "WARNING"},
        "pika": {"level": "WARNING"},
        # Start-up noise: django-axes says its version and settings at INFO in every process,
        # manage.py commands included, and every successful login besides (the audit trail has
        # the logins).
        "axes": {"level": "WARNING"},
    },
}
if urlparse(CELERY_BROKER_URL).scheme == "filesystem":
    # kombu warns "No hostname was supplied" at each connection to the embedded broker, which
    # has no host by design.
    LOGGING["loggers"]["kombu.connection"] = {"level": "ERROR"}
