from django.urls import path

from console.audit import apis, views

urlpatterns = [
    path("audit/", views.audit_list, name="audit-list"),
    path("audit/export.csv", views.audit_export, name="audit-export"),
    path("audit/verify", views.audit_verify_now, name="audit-verify"),
    path("audit/checkpoint", views.audit_checkpoint_now, name="audit-checkpoint"),
]

# Under /api/v1/ (console/urls.py).
api_urlpatterns = [
    path("audit", apis.AuditListApi.as_view(), name="api-audit-list"),
    path("audit/export", apis.AuditExportApi.as_view(), name="api-audit-export"),
]
