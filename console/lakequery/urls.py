from django.urls import include, path

from console.lakequery import apis, views

# Under lake-queries/.
lake_query_urls = [
    path("", views.lake_query_list, name="lake-query-list"),
    path("<int:query_id>/", views.lake_query_detail, name="lake-query-detail"),
    path("<int:query_id>/cancel", views.lake_query_cancel, name="lake-query-cancel"),
]

urlpatterns = [
    path("lake-queries/", include(lake_query_urls)),
    path("groups/<str:fingerprint>/why", views.why_fail, name="group-why"),
]

# Under /api/v1/lake-queries/<str:query_id>/.
api_lake_query_urls = [
    path("results", apis.LakeQueryResultsApi.as_view(), name="api-lake-query-results"),
    path("cancel", apis.LakeQueryCancelApi.as_view(), name="api-lake-query-cancel"),
]

# Under /api/v1/ (console/urls.py). Ids as text: the API answers a bad one with its own JSON 404,
# not the HTML page of an unmatched URL.
api_urlpatterns = [
    # Before the failure groups' own routes (console.browse), whose detail takes any path.
    path("groups/<str:fingerprint>/why", apis.WhyFailApi.as_view(), name="api-group-why"),
    path("lake-queries", apis.LakeQueryListApi.as_view(), name="api-lake-query-list"),
    path(
        "lake-queries/<str:query_id>",
        apis.LakeQueryDetailApi.as_view(),
        name="api-lake-query-detail",
    ),
    path("lake-queries/<str:query_id>/", include(api_lake_query_urls)),
]
