from django.apps import AppConfig
from django.core.checks import Tags, register


class AlertsConfig(AppConfig):
    name = "console.alerts"
    label = "alerts"
    verbose_name = "Alerts"

    def ready(self):
        from console.alerts import receivers  # noqa: F401 - connects the signal receivers
        from console.alerts.checks import named_variables_check

        register(named_variables_check, Tags.security, deploy=True)
