from django.urls import include, path

from console.notes import apis, views

# Under investigations/.
investigation_urls = [
    path("take", views.investigation_take_view, name="investigation-take"),
    path("hand-over", views.investigation_hand_over_view, name="investigation-hand-over"),
    path("release", views.investigation_release_view, name="investigation-release"),
    path("ticket", views.investigation_ticket_view, name="investigation-ticket"),
]

# The panel's forms post the target's kind and id as fields (ids hold any text, "/" included).
urlpatterns = [
    path("notes/add", views.note_add_view, name="note-add"),
    path("groups/<str:fingerprint>/status", views.group_status_view, name="group-status"),
    path("investigations/", include(investigation_urls)),
]

# Under /api/v1/investigations/. The actions before the kind: "take/messages/x" is never a
# message's id.
api_investigation_urls = [
    path(
        "take/<str:kind>/<path:target_id>",
        apis.InvestigationTakeApi.as_view(),
        name="api-investigation-take",
    ),
    path(
        "hand-over/<str:kind>/<path:target_id>",
        apis.InvestigationHandOverApi.as_view(),
        name="api-investigation-hand-over",
    ),
    path(
        "release/<str:kind>/<path:target_id>",
        apis.InvestigationReleaseApi.as_view(),
        name="api-investigation-release",
    ),
    path(
        "ticket/<str:kind>/<path:target_id>",
        apis.InvestigationTicketApi.as_view(),
        name="api-investigation-ticket",
    ),
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
