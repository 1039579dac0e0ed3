from django.conf import settings
from django.contrib import admin
from django.contrib.auth.decorators import login_required
from django.contrib.staticfiles import views as staticfiles
from django.urls import include, path, re_path
from django.views.generic import TemplateView
from drf_spectacular.views import SpectacularAPIView

from console import views
from console.access.urls import api_urlpatterns as access_api
from console.accounts.urls import api_urlpatterns as accounts_api
from console.accounts.views import LoginView
from console.alerts.urls import api_urlpatterns as alerts_api
from console.audit.urls import api_urlpatterns as audit_api
from console.browse.urls import api_urlpatterns as browse_api
from console.decisions.urls import api_urlpatterns as decisions_api
from console.delivery.urls import api_urlpatterns as poison_list_api
from console.lakequery.urls import api_urlpatterns as lakequery_api
from console.notes.urls import api_urlpatterns as notes_api
from console.processes.urls import api_urlpatterns as processes_api
from console.queues.urls import api_urlpatterns as queues_api
from console.retention.urls import api_urlpatterns as retention_api
from console.rules.urls import api_urlpatterns as rules_api
from console.runs.urls import api_urlpatterns as runs_api
from console.sso.views import LogoutView as SsoLogoutView

# A path no route takes: JSON under /api/, the 404 page elsewhere.
handler404 = "console.views.page_not_found"

urlpatterns = [
    path("login/", LoginView.as_view(), name="login"),  # an auditor lands on the audit trail
    # POST only (Django 5); after a provider's sign-in, on to the provider's sign-out.
    path("logout/", SsoLogoutView.as_view(), name="logout"),
    path("", include("console.sso.urls")),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Swagger UI from our static files, started by static/js/api_docs.js: no inline script.
    path(
        "api/docs/",
        login_required(TemplateView.as_view(template_name="api/docs.html")),
        name="api-docs",
    ),
    # Every app's API, in this order: the first route that matches wins.
    path(
        "api/v1/",
        include(
            [
                *notes_api,
                *lakequery_api,
                *browse_api,
                *queues_api,
                *audit_api,
                *decisions_api,
                *rules_api,
                *poison_list_api,
                *retention_api,
                *accounts_api,
                *access_api,
                *alerts_api,
                *runs_api,
                *processes_api,
            ]
        ),
    ),
    path("help/glossary/", views.glossary, name="glossary"),
    # Every app's pages, in this order: the first route that matches wins.
    *(
        path("", include(f"console.{app}.urls"))
        for app in (
            "audit",
            "alerts",
            "accounts",
            "access",
            "runs",
            "processes",
            "metrics",
            "lakequery",
            "notes",
            "decisions",
            "rules",
            "queues",
            "browse",
        )
    ),
]

# `make run`'s demo runs without DEBUG (its 404 and 500 are the console's pages): the web
# process serves the static files then, as runserver does only under DEBUG.
if settings.SERVE_STATIC:
    urlpatterns.append(
        re_path(
            rf"^{settings.STATIC_URL.strip('/')}/(?P<path>.*)$",
            staticfiles.serve,
            {"insecure": True},
        )
    )
