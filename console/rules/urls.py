from django.urls import path

from console.rules import apis, views

urlpatterns = [
    path("rules/", views.rule_list, name="rule-list"),
    path("rules/new", views.rule_new, name="rule-new"),
    path("rules/<int:rule_id>/", views.rule_detail, name="rule-detail"),
    path("rules/<int:rule_id>/approve", views.rule_approve, name="rule-approve"),
    path("rules/<int:rule_id>/reject", views.rule_reject, name="rule-reject"),
    path("rules/<int:rule_id>/withdraw", views.rule_withdraw, name="rule-withdraw"),
    path("rules/<int:rule_id>/remove", views.rule_remove, name="rule-remove"),
]

# Under /api/v1/ (console/urls.py).
api_urlpatterns = [
    path("rules", apis.RuleListApi.as_view(), name="api-rules"),
    path("rules/<int:rule_id>", apis.RuleDetailApi.as_view(), name="api-rule"),
    path("rules/<int:rule_id>/approve", apis.RuleApproveApi.as_view(), name="api-rule-approve"),
    path("rules/<int:rule_id>/reject", apis.RuleRejectApi.as_view(), name="api-rule-reject"),
    path("rules/<int:rule_id>/withdraw", apis.RuleWithdrawApi.as_view(), name="api-rule-withdraw"),
    path("rules/<int:rule_id>/remove", apis.RuleRemoveApi.as_view(), name="api-rule-remove"),
]
