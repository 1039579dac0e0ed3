from django.apps import AppConfig


class SsoConfig(AppConfig):
    name = "console.sso"
    label = "sso"
    verbose_name = "Sign-in providers"

    def ready(self):
        from console.sso import checks  # noqa: F401 (registers the configuration check)
