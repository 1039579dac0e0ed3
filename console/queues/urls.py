from django.urls import path

from console.queues import apis

# Under /api/v1/ (console/urls.py); the queues' list is console.browse's (it reads the counts).
api_urlpatterns = [
    path("queues/<path:name>/enable", apis.QueueEnableApi.as_view(), name="api-queue-enable"),
    path("queues/<path:name>/pause", apis.QueuePauseApi.as_view(), name="api-queue-pause"),
]
