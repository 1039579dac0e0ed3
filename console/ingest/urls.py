from django.urls import path

from console.ingest import apis

urlpatterns = [
    path("messages", apis.MessagesIngestApi.as_view(), name="ingest-messages"),
]
