from django.urls import path

from console.accounts.lockouts import apis, views

urlpatterns = [
    path("lockouts/", views.lockout_list, name="lockout-list"),
    path("lockouts/lift", views.lockout_lift, name="lockout-lift"),
]

# Under /api/v1/ (console/urls.py, through console/accounts/urls.py).
api_urlpatterns = [
    path("lockouts", apis.LockoutListApi.as_view(), name="api-lockout-list"),
    path("lockouts/lift", apis.LockoutLiftApi.as_view(), name="api-lockout-lift"),
]
