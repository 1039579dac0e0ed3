from django.urls import path

from console.processes import apis, probes, views

urlpatterns = [
    path("processes/", views.process_list, name="process-list"),
    # Probes: no sign-in (console.processes.probes).
    path("healthz", probes.healthz, name="healthz"),
    path("readyz", probes.readyz, name="readyz"),
]

# Under /api/v1/ (console/urls.py).
api_urlpatterns = [
    path("processes", apis.ProcessListApi.as_view(), name="api-process-list"),
]
