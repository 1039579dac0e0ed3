"""/metrics, for Prometheus: no sign-in, no session, no throttle (a plain view, not the API's).
Open to the addresses of METRICS_ALLOWED_IPS, or to a bearer METRICS_TOKEN from anywhere."""

import hmac
import ipaddress

from django.conf import settings
from django.http import HttpResponse, HttpResponseForbidden
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from console.accounts.lockouts.backends import client_ip
from console.metrics.collector import registry

REGISTRY = registry()


@csrf_exempt
@never_cache
@require_safe
def metrics(request):
    refused = _refused(request)
    if refused:
        return HttpResponseForbidden(refused + "\n", content_type="text/plain; charset=utf-8")
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)


def _refused(request):
    """Why this caller may not read the metrics, in one line; "" if it may."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not settings.METRICS_TOKEN:
            return "metrics: only a bearer token is accepted, and only when METRICS_TOKEN is set"
        # Compared in constant time: a token's prefix must not be guessable from timings.
        if hmac.compare_digest(token.strip().encode(), settings.METRICS_TOKEN.encode()):
            return ""
        return "metrics: wrong bearer token"
    address = client_ip(request)
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return "metrics: no client address to check against METRICS_ALLOWED_IPS"
    if ip.version == 6 and ip.ipv4_mapped:  # ::ffff:127.0.0.1 from a dual-stack socket
        ip = ip.ipv4_mapped
    if any(ip in network for network in settings.METRICS_ALLOWED_IPS):
        return ""
    return f"metrics: {ip} is not in METRICS_ALLOWED_IPS and no bearer token was given"
