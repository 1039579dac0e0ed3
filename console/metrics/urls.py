from django.urls import path

from console.metrics import views

urlpatterns = [
    # For Prometheus: no sign-in (console.metrics.views).
    path("metrics", views.metrics, name="metrics"),
]
