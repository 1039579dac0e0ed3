from django.urls import include, path

from console import urlconverters  # noqa: F401 - registers <msgid:...>
from console.browse import apis, views

# Under messages/.
message_urls = [
    path("", views.message_list, name="message-list"),
    path("export", views.message_export, name="message-export"),
    path("saved", views.saved_filter_create, name="saved-filter-create"),
    path("send", views.message_send, name="message-send"),
    path("saved/<int:filter_id>/delete", views.saved_filter_remove, name="saved-filter-delete"),
    path("<msgid:message_id>/raw", views.message_raw, name="message-raw"),
    path("<msgid:message_id>/headers", views.message_headers, name="message-headers"),
    path("<msgid:message_id>/", views.message_detail, name="message-detail"),
]

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("search/", views.search, name="search"),
    path("messages/", include(message_urls)),
    path("groups/", views.group_list, name="group-list"),
    path("groups/<msgid:fingerprint>/", views.group_detail, name="group-detail"),
]

# Under /api/v1/messages/. The body and the headers first: the detail route would take ".../body"
# for a message id.
api_message_urls = [
    path("<path:message_id>/body", apis.MessageBodyApi.as_view(), name="api-message-body"),
    path("<path:message_id>/headers", apis.MessageHeadersApi.as_view(), name="api-message-headers"),
    path("<path:message_id>", apis.MessageDetailApi.as_view(), name="api-message-detail"),
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
    path("stats", apis.StatsApi.as_view(), name="api-stats"),
    path("messages/", include(api_message_urls)),
]
