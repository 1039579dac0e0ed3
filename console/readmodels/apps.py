from django.apps import AppConfig


class ReadModelsConfig(AppConfig):
    name = "console.readmodels"
    label = "readmodels"
    verbose_name = "read models"

    def ready(self):
        from console.readmodels import receivers  # noqa: F401 - refresh when events are committed
