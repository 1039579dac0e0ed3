from django.urls import include, path

from console.access import apis, views
from console.routes import verb_apis, verb_pages

# What a second administrator does to a pending role grant, on its page and through the API; the
# one who asked for it withdraws it on its page only.
VERBS = ("confirm", "reject")

# Under role-grants/.
role_grant_urls = [
    path("", views.grant_list, name="role-grant-list"),
    path("<int:grant_id>/", views.grant_detail, name="role-grant-detail"),
    path(
        "<int:grant_id>/",
        include(verb_pages(views, "grant", (*VERBS, "withdraw"), name="role-grant")),
    ),
    path("ingest-rights/withdraw", views.ingest_right_withdraw, name="ingest-right-withdraw"),
]

urlpatterns = [
    path("role-grants/", include(role_grant_urls)),
]

# Under /api/v1/ (console/urls.py).
api_urlpatterns = [
    path("role-grants", apis.GrantListApi.as_view(), name="api-role-grant-list"),
    path("role-grants/<str:grant_id>", apis.GrantDetailApi.as_view(), name="api-role-grant-detail"),
    path(
        "role-grants/<str:grant_id>/", include(verb_apis(apis, "grant", VERBS, name="role-grant"))
    ),
]
