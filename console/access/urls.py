from django.urls import path

from console.access import apis, views

urlpatterns = [
    path("role-grants/", views.grant_list, name="role-grant-list"),
    path("role-grants/<int:grant_id>/", views.grant_detail, name="role-grant-detail"),
    path("role-grants/<int:grant_id>/confirm", views.grant_confirm, name="role-grant-confirm"),
    path("role-grants/<int:grant_id>/reject", views.grant_reject, name="role-grant-reject"),
    path("role-grants/<int:grant_id>/withdraw", views.grant_withdraw, name="role-grant-withdraw"),
    path(
        "role-grants/ingest-rights/withdraw",
        views.ingest_right_withdraw,
        name="ingest-right-withdraw",
    ),
]

# Under /api/v1/ (console/urls.py).
api_urlpatterns = [
    path("role-grants", apis.GrantListApi.as_view(), name="api-role-grant-list"),
    path("role-grants/<str:grant_id>", apis.GrantDetailApi.as_view(), name="api-role-grant-detail"),
    path(
        "role-grants/<str:grant_id>/confirm",
        apis.GrantConfirmApi.as_view(),
        name="api-role-grant-confirm",
    ),
    path(
        "role-grants/<str:grant_id>/reject",
        apis.GrantRejectApi.as_view(),
        name="api-role-grant-reject",
    ),
]
