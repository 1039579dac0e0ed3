from django.urls import include, path

from console.decisions import apis, approval_views, views

# Under requests/<int:request_id>/.
request_urls = [
    path("", views.request_detail, name="request-detail"),
    path("ids.txt", views.request_ids, name="request-ids"),
    path("outcome", views.request_outcome_list, name="request-outcome"),
    path("retry", views.request_retry, name="request-retry"),
    path("approve", approval_views.request_approve, name="request-approve"),
    path("reject", approval_views.request_reject, name="request-reject"),
    path("withdraw", approval_views.request_withdraw, name="request-withdraw"),
    path("cancel", approval_views.request_cancel, name="request-cancel"),
    path("break-glass", approval_views.request_break_glass, name="request-break-glass"),
    path("review", approval_views.request_review, name="request-review"),
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
    path("approve", apis.RequestApproveApi.as_view(), name="api-request-approve"),
    path("reject", apis.RequestRejectApi.as_view(), name="api-request-reject"),
    path("withdraw", apis.RequestWithdrawApi.as_view(), name="api-request-withdraw"),
    path("cancel", apis.RequestCancelApi.as_view(), name="api-request-cancel"),
    path("break-glass", apis.RequestBreakGlassApi.as_view(), name="api-request-break-glass"),
    path("review", apis.RequestReviewApi.as_view(), name="api-request-review"),
    path("ids", apis.RequestIdsApi.as_view(), name="api-request-ids"),
    path("outcome", apis.RequestOutcomeApi.as_view(), name="api-request-outcome"),
    path(
        "outcome/messages",
        apis.RequestOutcomeMessagesApi.as_view(),
        name="api-request-outcome-messages",
    ),
    path("retry", apis.RequestRetryApi.as_view(), name="api-request-retry"),
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
