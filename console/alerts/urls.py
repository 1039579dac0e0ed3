from django.urls import include, path

from console.alerts import apis, views

# Under alerts/.
alert_urls = [
    path("", views.alert_list, name="alert-list"),
    path("read", views.alert_read_all, name="alert-read-all"),
    path("settings", views.alert_settings, name="alert-settings"),
    path("outbox", views.outbox, name="alert-outbox"),
    path("outbox/<int:delivery_id>/retry", views.delivery_retry, name="alert-delivery-retry"),
    path("webhooks", views.webhook_create, name="alert-webhook-create"),
    path("webhooks/<int:webhook_id>", views.webhook_edit, name="alert-webhook-edit"),
    path("webhooks/<int:webhook_id>/switch", views.webhook_switch, name="alert-webhook-switch"),
    path("thresholds", views.threshold_set, name="alert-threshold-set"),
    path("thresholds/<str:queue>/remove", views.threshold_remove, name="alert-threshold-remove"),
]

urlpatterns = [
    path("alerts/", include(alert_urls)),
]

# Under /api/v1/alerts/.
api_alert_urls = [
    path("read", apis.AlertReadApi.as_view(), name="api-alert-read"),
    path("outbox", apis.OutboxApi.as_view(), name="api-alert-outbox"),
    path("subscriptions", apis.SubscriptionsApi.as_view(), name="api-alert-subscriptions"),
    path("webhooks", apis.WebhookListApi.as_view(), name="api-alert-webhooks"),
    path("webhooks/<int:webhook_id>", apis.WebhookDetailApi.as_view(), name="api-alert-webhook"),
    path("thresholds", apis.ThresholdListApi.as_view(), name="api-alert-thresholds"),
]

api_urlpatterns = [
    path("alerts", apis.AlertListApi.as_view(), name="api-alert-list"),
    path("alerts/", include(api_alert_urls)),
]
