from django.apps import AppConfig


class LakeConfig(AppConfig):
    name = "console.lake"
    label = "lake"
