from django.urls import include, path

from console.routes import verb_apis, verb_pages
from console.rules import apis, views

# What a standing rule's page and the API do to it, each under the rule's own path.
VERBS = ("approve", "reject", "withdraw", "remove")

urlpatterns = [
    path("rules/", views.rule_list, name="rule-list"),
    path("rules/new", views.rule_new, name="rule-new"),
    path("rules/<int:rule_id>/", views.rule_detail, name="rule-detail"),
    path("rules/<int:rule_id>/", include(verb_pages(views, "rule", VERBS))),
]

# Under /api/v1/ (console/urls.py).
api_urlpatterns = [
    path("rules", apis.RuleListApi.as_view(), name="api-rules"),
    path("rules/<int:rule_id>", apis.RuleDetailApi.as_view(), name="api-rule"),
    path("rules/<int:rule_id>/", include(verb_apis(apis, "rule", VERBS))),
]
