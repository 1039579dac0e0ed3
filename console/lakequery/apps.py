from django.apps import AppConfig


class LakeQueryConfig(AppConfig):
    name = "console.lakequery"
    label = "lakequery"
