from django.urls import include, path

from console.access import apis, views

# Under role-grants/<int:grant_id>/.
grant_urls = [
    path("", views.grant_detail, name="role-grant-detail"),
    path("confirm", views.grant_confirm, name="role-grant-confirm"),
    path("reject", views.grant_reject, name="role-grant-reject"),
    path("withdraw", views.grant_withdraw, name="role-grant-withdraw"),
]

# Under role-grants/.
role_grant_urls = [
    path("", views.grant_list, name="role-grant-list"),
    path("<int:grant_id>/", include(grant_urls)),
    path("ingest-rights/withdraw", views.ingest_right_withdraw, name="ingest-right-withdraw"),
]

urlpatterns = [
    path("role-grants/", include(role_grant_urls)),
]

# Under /api/v1/role-grants/<str:grant_id>/.
api_grant_urls = [
    path("confirm", apis.GrantConfirmApi.as_view(), name="api-role-grant-confirm"),
    path("reject", apis.GrantRejectApi.as_view(), name="api-role-grant-reject"),
]

# Under /api/v1/ (console/urls.py).
api_urlpatterns = [
    path("role-grants", apis.GrantListApi.as_view(), name="api-role-grant-list"),
    path("role-grants/<str:grant_id>", apis.GrantDetailApi.as_view(), name="api-role-grant-detail"),
    path("role-grants/<str:grant_id>/", include(api_grant_urls)),
]
