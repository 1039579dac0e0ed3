import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
application = get_wsgi_application()

# The web's heartbeat (console.processes), from here: every server that serves the console loads
# this module (runserver's serving child, each gunicorn worker), and nothing else does.
from console.processes.beating import beating_wsgi  # noqa: E402 - needs the apps loaded above

application = beating_wsgi(application)
