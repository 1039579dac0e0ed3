from django.urls import path

from console.accounts import profile_apis, profile_views, token_apis, token_views

urlpatterns = [
    path("account/", profile_views.my_account, name="my-account"),
    path("account/tokens/<str:key>/revoke", token_views.token_revoke_view, name="token-revoke"),
    path("account/service-tokens/", token_views.service_tokens, name="service-tokens"),
    path(
        "account/service-accounts/new",
        token_views.service_account_new,
        name="service-account-new",
    ),
]

# Under /api/v1/ (console/urls.py).
api_urlpatterns = [
    path("account", profile_apis.AccountApi.as_view(), name="api-account"),
    path("tokens", token_apis.TokenListApi.as_view(), name="api-tokens"),
    path("tokens/<str:key>", token_apis.TokenApi.as_view(), name="api-token"),
]
