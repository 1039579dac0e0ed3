from django.urls import include, path

from console import urlconverters  # noqa: F401 - registers <msgid:...>
from console.queues import apis, views
from console.routes import verb_apis, verb_pages

# What a person with the right to change a queue does to it, on the queues page and through the
# API.
VERBS = ("enable", "pause")

urlpatterns = [
    path("queues/", views.queue_list, name="queue-list"),
    path("queues/<msgid:name>/", include(verb_pages(views, "queue", VERBS))),
]

# Under /api/v1/ (console/urls.py).
api_urlpatterns = [
    path("queues", apis.QueueListApi.as_view(), name="api-queue-list"),
    path("queues/<path:name>/", include(verb_apis(apis, "queue", VERBS))),
]
