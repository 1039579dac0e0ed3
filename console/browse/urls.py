from django.urls import path, register_converter

from console.browse import apis, views
from console.browse.urlconverters import MessageIdConverter

register_converter(MessageIdConverter, "msgid")

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("search/", views.search, name="search"),
    path("messages/", views.message_list, name="message-list"),
    path("messages/export", views.message_export, name="message-export"),
    path("messages/saved", views.saved_filter_create, name="saved-filter-create"),
    path(
        "messages/saved/<int:filter_id>/delete",
        views.saved_filter_remove,
        name="saved-filter-delete",
    ),
    path("messages/<msgid:message_id>/raw", views.message_raw, name="message-raw"),
    path("messages/<msgid:message_id>/headers", views.message_headers, name="message-headers"),
    path("messages/<msgid:message_id>/", views.message_detail, name="message-detail"),
    path("groups/", views.group_list, name="group-list"),
    path("groups/<msgid:fingerprint>/", views.group_detail, name="group-detail"),
    path("queues/", views.queue_list, name="queue-list"),
    path("queues/<msgid:name>/enable", views.queue_enable, name="queue-enable"),
    path("queues/<msgid:name>/pause", views.queue_pause_view, name="queue-pause"),
]

# Under /api/v1/ (console/urls.py).
api_urlpatterns = [
    # GET lists, POST sends (console.ingest); the list's old path answers too, and says so.
    path("messages", apis.MessagesApi.as_view(), name="api-messages"),
    path("index/messages", apis.MessageIndexApi.as_view(), name="api-index-messages"),
    path(
        "index/messages/export", apis.MessageExportApi.as_view(), name="api-index-messages-export"
    ),
    path("search", apis.SearchApi.as_view(), name="api-search"),
    path("groups", apis.GroupListApi.as_view(), name="api-group-list"),
    path("groups/<path:fingerprint>", apis.GroupDetailApi.as_view(), name="api-group-detail"),
    # A queue's switches are console.queues'; the list reads the counts, so it is here.
    path("queues", apis.QueueListApi.as_view(), name="api-queue-list"),
    path("stats", apis.StatsApi.as_view(), name="api-stats"),
    # The body and the headers first: the detail route would take ".../body" for a message id.
    path("messages/<path:message_id>/body", apis.MessageBodyApi.as_view(), name="api-message-body"),
    path(
        "messages/<path:message_id>/headers",
        apis.MessageHeadersApi.as_view(),
        name="api-message-headers",
    ),
    path("messages/<path:message_id>", apis.MessageDetailApi.as_view(), name="api-message-detail"),
]
