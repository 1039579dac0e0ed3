from django.urls import path

from console.delivery import apis

urlpatterns = [
    path("messages/<path:message_id>", apis.MessageDetailApi.as_view(), name="api-message-detail"),
]
