from django.apps import AppConfig


class DeliveryConfig(AppConfig):
    name = "console.delivery"
    label = "delivery"

    def ready(self):
        from console.delivery import receivers  # noqa: F401 - deliver when messages arrive
