from django.apps import AppConfig


class DeliveryConfig(AppConfig):
    name = "console.delivery"
    label = "delivery"
