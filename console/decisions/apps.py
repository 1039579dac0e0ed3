from django.apps import AppConfig


class DecisionsConfig(AppConfig):
    name = "console.decisions"
    label = "decisions"
