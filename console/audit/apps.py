from django.apps import AppConfig
from django.core.checks import Tags, register


class AuditConfig(AppConfig):
    name = "console.audit"
    label = "audit"

    def ready(self):
        from console.audit import receivers  # noqa: F401 - connects the login receivers
        from console.audit.checks import audit_key_check

        register(audit_key_check, Tags.security, deploy=True)
