from django.urls import path

from console.retention import apis

# Under /api/v1/ (console/urls.py). Ids as text: the API answers a bad one with its own JSON 404,
# not the HTML page of an unmatched URL.
api_urlpatterns = [
    path("purges", apis.PurgeListApi.as_view(), name="api-purge-list"),
    path("purges/<str:purge_id>", apis.PurgeDetailApi.as_view(), name="api-purge-detail"),
    path("purges/<str:purge_id>/ids", apis.PurgeIdsApi.as_view(), name="api-purge-ids"),
]
