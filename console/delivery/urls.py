from django.urls import include, path

from console.delivery import apis

# Under /api/v1/poison-list/. An entry's path has its own prefix: a message id may be any text,
# "changes" or "check" too.
api_poison_list_urls = [
    path("changes", apis.PoisonChangesApi.as_view(), name="api-poison-changes"),
    path("check", apis.PoisonCheckApi.as_view(), name="api-poison-check"),
    path("reports", apis.PoisonReportApi.as_view(), name="api-poison-reports"),
    path("entries/<path:message_id>", apis.PoisonEntryApi.as_view(), name="api-poison-entry"),
]

# Under /api/v1/ (console/urls.py).
api_urlpatterns = [
    path("poison-list", apis.PoisonListApi.as_view(), name="api-poison-list"),
    path("poison-list/", include(api_poison_list_urls)),
]
