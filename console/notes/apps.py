from django.apps import AppConfig


class NotesConfig(AppConfig):
    name = "console.notes"
    label = "notes"

    def ready(self):
        from console.notes import receivers  # noqa: F401 - connects them
