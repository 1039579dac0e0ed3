from django.apps import AppConfig


class QueuesConfig(AppConfig):
    name = "console.queues"
    label = "queues"
