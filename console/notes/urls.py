from django.urls import include, path

from console.notes import apis, views
from console.routes import verb_apis, verb_pages

# What a person does to an investigation of a message or a failure group, on its panel and
# through the API.
INVESTIGATION_VERBS = ("take", "hand-over", "release", "ticket")

# The panel's forms post the target's kind and id as fields (ids hold any text, "/" included).
urlpatterns = [
    path("notes/add", views.note_add_view, name="note-add"),
    path("groups/<str:fingerprint>/status", views.group_status_view, name="group-status"),
    path("investigations/", include(verb_pages(views, "investigation", INVESTIGATION_VERBS))),
]

# Under /api/v1/investigations/. The actions before the kind: "take/messages/x" is never a
# message's id.
api_investigation_urls = [
    *verb_apis(apis, "investigation", INVESTIGATION_VERBS, after="/<str:kind>/<path:target_id>"),
    path("<str:kind>/<path:target_id>", apis.InvestigationApi.as_view(), name="api-investigation"),
]

# Under /api/v1/ (console/urls.py), before the failure groups' own routes (console.browse), whose
# detail takes any path after groups/.
api_urlpatterns = [
    path(
        "groups/<str:fingerprint>/status",
        apis.GroupStatusApi.as_view(),
        name="api-group-status",
    ),
    path("notes/<str:kind>/<path:target_id>", apis.NoteListApi.as_view(), name="api-notes"),
    path("investigations/", include(api_investigation_urls)),
]
