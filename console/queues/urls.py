from django.urls import path

from console import urlconverters  # noqa: F401 - registers <msgid:...>
from console.queues import apis, views

urlpatterns = [
    path("queues/", views.queue_list, name="queue-list"),
    path("queues/<msgid:name>/enable", views.queue_enable, name="queue-enable"),
    path("queues/<msgid:name>/pause", views.queue_pause_view, name="queue-pause"),
]

# Under /api/v1/ (console/urls.py).
api_urlpatterns = [
    path("queues", apis.QueueListApi.as_view(), name="api-queue-list"),
    path("queues/<path:name>/enable", apis.QueueEnableApi.as_view(), name="api-queue-enable"),
    path("queues/<path:name>/pause", apis.QueuePauseApi.as_view(), name="api-queue-pause"),
]
