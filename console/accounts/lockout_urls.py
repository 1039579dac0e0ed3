from django.urls import path

from console.accounts import lockout_apis, lockout_views

urlpatterns = [
    path("lockouts/", lockout_views.lockout_list, name="lockout-list"),
    path("lockouts/lift", lockout_views.lockout_lift, name="lockout-lift"),
]

# Under /api/v1/ (console/urls.py).
api_urlpatterns = [
    path("lockouts", lockout_apis.LockoutListApi.as_view(), name="api-lockout-list"),
    path("lockouts/lift", lockout_apis.LockoutLiftApi.as_view(), name="api-lockout-lift"),
]
