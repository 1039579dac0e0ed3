from django.urls import path

from console.sso import views

urlpatterns = [
    path("sso/oidc/login/", views.oidc_sign_in, name="oidc-login"),
    path("sso/oidc/callback/", views.oidc_callback, name="oidc-callback"),
]
