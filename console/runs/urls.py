from django.urls import path

from console.runs import apis, views

urlpatterns = [
    path("runs/", views.run_list, name="run-list"),
]

# Under /api/v1/ (console/urls.py).
api_urlpatterns = [
    path("runs", apis.RunListApi.as_view(), name="api-run-list"),
]
