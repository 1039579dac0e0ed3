from django.apps import AppConfig


class RetentionConfig(AppConfig):
    name = "console.retention"
    label = "retention"
