from django.urls import path

from console.accounts.profile import apis, views

urlpatterns = [
    path("account/", views.my_account, name="my-account"),
]

# Under /api/v1/ (console/urls.py, through console/accounts/urls.py).
api_urlpatterns = [
    path("account", apis.AccountApi.as_view(), name="api-account"),
]
