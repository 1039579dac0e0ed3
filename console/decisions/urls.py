from django.urls import include, path

from console.decisions import apis, approval_views, views
from console.routes import verb_apis, verb_pages

# What the approvers, the requester and a break-glass reviewer do to a request, on its page
# (console.decisions.approval_views) and through the API.
APPROVAL_VERBS = ("approve", "reject", "withdraw", "cancel", "break-glass", "review")

# Under requests/<int:request_id>/.
request_urls = [
    path("", views.request_detail, name="request-detail"),
    path("ids.txt", views.request_ids, name="request-ids"),
    path("outcome", views.request_outcome_list, name="request-outcome"),
    path("retry", views.request_retry, name="request-retry"),
    *verb_pages(approval_views, "request", APPROVAL_VERBS),
]

urlpatterns = [
    path("requests/", views.request_list, name="request-list"),
    path("requests/new", views.request_new, name="request-new"),
    path("requests/quick", views.request_quick, name="request-quick"),
    path("requests/selection", views.selection_post, name="selection-post"),
    path("requests/<int:request_id>/", include(request_urls)),
    path("notifications/", views.notification_list, name="notification-list"),
]

# Under /api/v1/requests/<str:request_id>/.
api_request_urls = [
    *verb_apis(apis, "request", (*APPROVAL_VERBS, "ids", "outcome", "retry")),
    path(
        "outcome/messages",
        apis.RequestOutcomeMessagesApi.as_view(),
        name="api-request-outcome-messages",
    ),
]

# Under /api/v1/ (console/urls.py). Any text as the id, not <int:>: an id that is not a number
# is a JSON 404 like an unknown one, not Django's HTML page.
api_urlpatterns = [
    path("requests", apis.RequestListApi.as_view(), name="api-request-list"),
    # Before the requests' own routes: "patch-preview" is no request's number.
    path(
        "requests/patch-preview",
        apis.RequestPatchPreviewApi.as_view(),
        name="api-request-patch-preview",
    ),
    path("requests/<str:request_id>", apis.RequestDetailApi.as_view(), name="api-request-detail"),
    path("requests/<str:request_id>/", include(api_request_urls)),
    path("notifications", apis.NotificationListApi.as_view(), name="api-notification-list"),
]
