from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "console.audit"
    label = "audit"

    def ready(self):
        from console.audit import receivers  # noqa: F401 - connects the login receivers
