from django.urls import path

from console.accounts.tokens import apis, views

urlpatterns = [
    path("account/tokens/<str:key>/revoke", views.token_revoke_view, name="token-revoke"),
    path("account/service-tokens/", views.service_tokens, name="service-tokens"),
    path(
        "account/service-accounts/new",
        views.service_account_new,
        name="service-account-new",
    ),
]

# Under /api/v1/ (console/urls.py, through console/accounts/urls.py).
api_urlpatterns = [
    path("tokens", apis.TokenListApi.as_view(), name="api-tokens"),
    path("tokens/<str:key>", apis.TokenApi.as_view(), name="api-token"),
]
