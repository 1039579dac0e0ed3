from django.apps import AppConfig


class BrowseConfig(AppConfig):
    name = "console.browse"
    label = "browse"
