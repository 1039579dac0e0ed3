from django.apps import AppConfig
from django.core.checks import Tags, register


class AccountsConfig(AppConfig):
    name = "console.accounts"
    label = "accounts"

    def ready(self):
        from console.accounts import receivers  # noqa: F401 - connects the lockout receivers
        from console.accounts.checks import proxy_layout_check

        register(proxy_layout_check, Tags.security, deploy=True)
