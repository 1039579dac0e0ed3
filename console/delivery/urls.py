from django.urls import path

from console.delivery import apis

# Under /api/v1/ (console/urls.py). An entry's path has its own prefix: a message id may be any
# text, "changes" or "check" too.
api_urlpatterns = [
    path("poison-list", apis.PoisonListApi.as_view(), name="api-poison-list"),
    path("poison-list/changes", apis.PoisonChangesApi.as_view(), name="api-poison-changes"),
    path("poison-list/check", apis.PoisonCheckApi.as_view(), name="api-poison-check"),
    path("poison-list/reports", apis.PoisonReportApi.as_view(), name="api-poison-reports"),
    path(
        "poison-list/entries/<path:message_id>",
        apis.PoisonEntryApi.as_view(),
        name="api-poison-entry",
    ),
]
