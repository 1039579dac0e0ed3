from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from console.browse.urls import api_urlpatterns as browse_api

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),  # POST only (Django 5)
    path("admin/", admin.site.urls),
    # browse first: its "messages/<id>/body" would otherwise be read as a message id.
    path("api/v1/", include(browse_api)),
    path("api/v1/", include("console.ingest.urls")),
    path("api/v1/", include("console.delivery.urls")),
    path("", include("console.browse.urls")),
]
