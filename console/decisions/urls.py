from django.urls import path

from console.decisions import apis, approval_views, views

urlpatterns = [
    path("requests/", views.request_list, name="request-list"),
    path("requests/new", views.request_new, name="request-new"),
    path("requests/quick", views.request_quick, name="request-quick"),
    path("requests/selection", views.selection_post, name="selection-post"),
    path("requests/<int:request_id>/", views.request_detail, name="request-detail"),
    path("requests/<int:request_id>/ids.txt", views.request_ids, name="request-ids"),
    path("requests/<int:request_id>/outcome", views.request_outcome_list, name="request-outcome"),
    path("requests/<int:request_id>/retry", views.request_retry, name="request-retry"),
    path(
        "requests/<int:request_id>/approve", approval_views.request_approve, name="request-approve"
    ),
    path("requests/<int:request_id>/reject", approval_views.request_reject, name="request-reject"),
    path(
        "requests/<int:request_id>/withdraw",
        approval_views.request_withdraw,
        name="request-withdraw",
    ),
    path("requests/<int:request_id>/cancel", approval_views.request_cancel, name="request-cancel"),
    path(
        "requests/<int:request_id>/break-glass",
        approval_views.request_break_glass,
        name="request-break-glass",
    ),
    path("requests/<int:request_id>/review", approval_views.request_review, name="request-review"),
    path("notifications/", views.notification_list, name="notification-list"),
]

# Under /api/v1/ (console/urls.py). Any text as the id, not <int:>: an id that is not a number
# is a JSON 404 like an unknown one, not Django's HTML page.
api_urlpatterns = [
    path("requests", apis.RequestListApi.as_view(), name="api-request-list"),
    path("requests/<str:request_id>", apis.RequestDetailApi.as_view(), name="api-request-detail"),
    path(
        "requests/<str:request_id>/approve",
        apis.RequestApproveApi.as_view(),
        name="api-request-approve",
    ),
    path(
        "requests/<str:request_id>/reject",
        apis.RequestRejectApi.as_view(),
        name="api-request-reject",
    ),
    path(
        "requests/<str:request_id>/withdraw",
        apis.RequestWithdrawApi.as_view(),
        name="api-request-withdraw",
    ),
    path(
        "requests/<str:request_id>/cancel",
        apis.RequestCancelApi.as_view(),
        name="api-request-cancel",
    ),
    path(
        "requests/<str:request_id>/break-glass",
        apis.RequestBreakGlassApi.as_view(),
        name="api-request-break-glass",
    ),
    path(
        "requests/<str:request_id>/review",
        apis.RequestReviewApi.as_view(),
        name="api-request-review",
    ),
    path("requests/<str:request_id>/ids", apis.RequestIdsApi.as_view(), name="api-request-ids"),
    path(
        "requests/<str:request_id>/outcome",
        apis.RequestOutcomeApi.as_view(),
        name="api-request-outcome",
    ),
    path(
        "requests/<str:request_id>/outcome/messages",
        apis.RequestOutcomeMessagesApi.as_view(),
        name="api-request-outcome-messages",
    ),
    path(
        "requests/<str:request_id>/retry",
        apis.RequestRetryApi.as_view(),
        name="api-request-retry",
    ),
    path("notifications", apis.NotificationListApi.as_view(), name="api-notification-list"),
]
