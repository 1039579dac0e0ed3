from django.urls import path

from console.alerts import apis, views

urlpatterns = [
    path("alerts/", views.alert_list, name="alert-list"),
    path("alerts/read", views.alert_read_all, name="alert-read-all"),
    path("alerts/settings", views.alert_settings, name="alert-settings"),
    path("alerts/outbox", views.outbox, name="alert-outbox"),
    path(
        "alerts/outbox/<int:delivery_id>/retry", views.delivery_retry, name="alert-delivery-retry"
    ),
    path("alerts/webhooks", views.webhook_create, name="alert-webhook-create"),
    path("alerts/webhooks/<int:webhook_id>", views.webhook_edit, name="alert-webhook-edit"),
    path(
        "alerts/webhooks/<int:webhook_id>/switch", views.webhook_switch, name="alert-webhook-switch"
    ),
    path("alerts/thresholds", views.threshold_set, name="alert-threshold-set"),
    path(
        "alerts/thresholds/<str:queue>/remove",
        views.threshold_remove,
        name="alert-threshold-remove",
    ),
]

api_urlpatterns = [
    path("alerts", apis.AlertListApi.as_view(), name="api-alert-list"),
    path("alerts/read", apis.AlertReadApi.as_view(), name="api-alert-read"),
    path("alerts/outbox", apis.OutboxApi.as_view(), name="api-alert-outbox"),
    path("alerts/subscriptions", apis.SubscriptionsApi.as_view(), name="api-alert-subscriptions"),
    path("alerts/webhooks", apis.WebhookListApi.as_view(), name="api-alert-webhooks"),
    path(
        "alerts/webhooks/<int:webhook_id>",
        apis.WebhookDetailApi.as_view(),
        name="api-alert-webhook",
    ),
    path("alerts/thresholds", apis.ThresholdListApi.as_view(), name="api-alert-thresholds"),
]
