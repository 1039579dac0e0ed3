from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "console.alerts"
    label = "alerts"
    verbose_name = "Alerts"

    def ready(self):
        from console.alerts import receivers  # noqa: F401 - connects the signal receivers
