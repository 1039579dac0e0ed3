from django.apps import AppConfig


class NotesConfig(AppConfig):
    name = "console.notes"
    label = "notes"
