"""`manage.py check --deploy`: the settings that decide a client's address (client_ip, which
lockouts, anonymous API rates and /metrics count by) and who reads /metrics, where together they
are unsafe. Each warning names the setting to change.

The documented production layout is gunicorn on 127.0.0.1 behind a TLS proxy on the same host
(BEHIND_PROXY, docs/guides/production.md). Its proxy connects from the loopback, so:

- proxy.W001: behind a proxy, TRUSTED_PROXY_COUNT=0 makes every client's address the proxy's:
  anyone can lock anyone out (five failures on their name), the anonymous rate is shared by all;
- proxy.W002: TRUSTED_PROXY_COUNT above 0 with no proxy said to be in front: a client writes
  X-Forwarded-For itself and picks its address (past its lockout, into METRICS_ALLOWED_IPS);
- metrics.W001: behind a proxy with TRUSTED_PROXY_COUNT=0, METRICS_ALLOWED_IPS holding the
  loopback answers every client the proxy passes on: /metrics is public;
- metrics.W002: behind a proxy, the loopback allowed and no METRICS_TOKEN: /metrics is open to
  any request the proxy passes without X-Forwarded-For, and to anything on the host that can
  make a request (another service, a server-side request forgery);
- metrics.W003: METRICS_ALLOWED_IPS holds a network of every address (0.0.0.0/0, ::/0);
- metrics.W004: METRICS_TOKEN is shorter than 32 characters.

"Behind a proxy" is what the settings say: SECURE_PROXY_SSL_HEADER (BEHIND_PROXY=true),
USE_X_FORWARDED_HOST or USE_X_FORWARDED_PORT.
"""

from django.conf import settings
from django.core.checks import Warning

TOKEN_LENGTH_MIN = 32
LAYOUT = "see Running in production, docs/guides/production.md"


def behind_proxy():
    """Whether the settings say a proxy stands in front, and which says it."""
    for name in ("SECURE_PROXY_SSL_HEADER", "USE_X_FORWARDED_HOST", "USE_X_FORWARDED_PORT"):
        if getattr(settings, name, None):
            return name
    return None


def _loopback_allowed():
    return any(network.is_loopback for network in settings.METRICS_ALLOWED_IPS)


def proxy_layout_check(app_configs=None, **kwargs):
    found = []
    proxy = behind_proxy()
    count = settings.TRUSTED_PROXY_COUNT
    if proxy and count == 0:
        found.append(
            Warning(
                f"TRUSTED_PROXY_COUNT is 0 behind a proxy ({proxy} is set): every client has "
                "the proxy's address, so failed logins lock a user out for everyone and the "
                "anonymous API rate is shared by all.",
                hint=f"Set TRUSTED_PROXY_COUNT to the number of proxies that append to "
                f"X-Forwarded-For (1 for the documented layout); {LAYOUT}.",
                id="proxy.W001",
            )
        )
    if not proxy and count > 0:
        found.append(
            Warning(
                f"TRUSTED_PROXY_COUNT is {count} but no proxy is said to be in front "
                "(BEHIND_PROXY is off): a client writes X-Forwarded-For itself and chooses "
                "the address its logins and /metrics are judged by.",
                hint="Set TRUSTED_PROXY_COUNT=0 unless a proxy appends to X-Forwarded-For; "
                "behind one, set BEHIND_PROXY=true.",
                id="proxy.W002",
            )
        )
    if proxy and _loopback_allowed():
        if count == 0:
            found.append(
                Warning(
                    "METRICS_ALLOWED_IPS holds the loopback, and behind a proxy on this host "
                    "with TRUSTED_PROXY_COUNT=0 every client comes from the loopback: /metrics "
                    "answers anyone.",
                    hint="Set TRUSTED_PROXY_COUNT (1 for the documented layout), or leave "
                    f"METRICS_ALLOWED_IPS empty and set METRICS_TOKEN; {LAYOUT}.",
                    id="metrics.W001",
                )
            )
        elif not settings.METRICS_TOKEN:
            found.append(
                Warning(
                    "METRICS_ALLOWED_IPS holds the loopback behind a proxy and METRICS_TOKEN is "
                    "not set: /metrics answers any request the proxy passes on without "
                    "X-Forwarded-For, and anything on this host that can make a request.",
                    hint="Set METRICS_TOKEN (a Prometheus elsewhere sends it through the proxy), "
                    f"or leave METRICS_ALLOWED_IPS empty; {LAYOUT}.",
                    id="metrics.W002",
                )
            )
    if any(network.prefixlen == 0 for network in settings.METRICS_ALLOWED_IPS):
        found.append(
            Warning(
                "METRICS_ALLOWED_IPS holds every address (a /0 network): /metrics is public.",
                hint="List only the scrapers' addresses, or none and set METRICS_TOKEN.",
                id="metrics.W003",
            )
        )
    if settings.METRICS_TOKEN and len(settings.METRICS_TOKEN) < TOKEN_LENGTH_MIN:
        found.append(
            Warning(
                f"METRICS_TOKEN is shorter than {TOKEN_LENGTH_MIN} characters.",
                hint="Set METRICS_TOKEN to a longer random secret (python -c 'import secrets; "
                "print(secrets.token_urlsafe(32))').",
                id="metrics.W004",
            )
        )
    return found
