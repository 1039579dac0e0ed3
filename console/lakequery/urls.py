from django.urls import path

from console.lakequery import apis, views

urlpatterns = [
    path("lake-queries/", views.lake_query_list, name="lake-query-list"),
    path("lake-queries/<int:query_id>/", views.lake_query_detail, name="lake-query-detail"),
    path("lake-queries/<int:query_id>/cancel", views.lake_query_cancel, name="lake-query-cancel"),
]

# Under /api/v1/ (console/urls.py). Ids as text: the API answers a bad one with its own JSON 404,
# not the HTML page of an unmatched URL.
api_urlpatterns = [
    path("lake-queries", apis.LakeQueryListApi.as_view(), name="api-lake-query-list"),
    path(
        "lake-queries/<str:query_id>",
        apis.LakeQueryDetailApi.as_view(),
        name="api-lake-query-detail",
    ),
    path(
        "lake-queries/<str:query_id>/results",
        apis.LakeQueryResultsApi.as_view(),
        name="api-lake-query-results",
    ),
    path(
        "lake-queries/<str:query_id>/cancel",
        apis.LakeQueryCancelApi.as_view(),
        name="api-lake-query-cancel",
    ),
]
