from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "console.accounts"
    label = "accounts"

    def ready(self):
        from console.accounts import receivers  # noqa: F401 - connects the lockout receivers
