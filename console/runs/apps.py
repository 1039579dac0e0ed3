from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "console.runs"
    label = "runs"
