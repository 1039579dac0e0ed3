from django.apps import AppConfig


class AccessConfig(AppConfig):
    """Who may do what: every change to users, roles and permissions audited whatever the route,
    nobody raising their own rights, grants of the approve right confirmed by a second
    administrator, and a cool-down before a new or changed account may approve."""

    name = "console.access"
    label = "access"

    def ready(self):
        from console.access import receivers  # noqa: F401
