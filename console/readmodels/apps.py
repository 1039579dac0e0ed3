from django.apps import AppConfig


class ReadModelsConfig(AppConfig):
    name = "console.readmodels"
    label = "readmodels"
    verbose_name = "read models"

    def ready(self):
        import console.readmodels.queue_counts  # noqa: F401 - hands console.queues its counts
        from console.readmodels import receivers  # noqa: F401 - refresh when events are committed
