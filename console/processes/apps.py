from django.apps import AppConfig


class ProcessesConfig(AppConfig):
    name = "console.processes"
    label = "processes"

    def ready(self):
        # Celery's signals, heard in every process that loads the apps: a worker and beat load
        # them (Celery's Django fix-up calls django.setup() before the worker is ready, or beat
        # starts), and the receivers do nothing in a process that does not beat.
        from console.processes import receivers  # noqa: F401
