from django.apps import AppConfig


class IngestConfig(AppConfig):
    name = "console.ingest"
    label = "ingest"
