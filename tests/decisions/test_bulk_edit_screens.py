"""The bulk edit's screens (issue 46, point 3): the request form offers a JSON Patch on a failure
group, a selection and a filter (one message is edited with its body and headers); a patch is
sent only after its preview was shown, and a patch changed since is previewed again; the
selection bar, the group's page and a "why do these fail" finding about a field lead to it,
the finding with the patch to start from; the request page shows the patch and the preview,
the diffs only to who may read bodies."""

import json
from urllib.parse import quote, urlencode

import pytest
from django.urls import reverse
from django.utils import timezone

from console.decisions.models import ActionRequest
from console.decisions.selections import selection_ids
from console.decisions.services import Action, action_request_create
from console.lakequery.models import LakeQuery
from tests.browse.conftest import login
from tests.decisions.conftest import CURRENCY_GROUP as GROUP

JSON = "application/json"
ADD_CURRENCY = [{"op": "add", "path": "/currency", "value": "EUR"}]


def _new(**params):
    return reverse("request-new") + "?" + urlencode(params, doseq=True)


GROUP_FORM = _new(scope="group", group=GROUP)


def _posted(patch=ADD_CURRENCY, **fields):
    return {"action": "reprocess", "patch": json.dumps(patch), "comment": "euros", **fields}


@pytest.mark.parametrize(
    ("params", "bulk"),
    [
        ({"scope": "group", "group": GROUP}, True),
        ({"scope": "selection", "ids": ["o-1", "o-2"]}, True),
        ({"scope": "filter", "queue": "orders"}, True),
        ({"scope": "message", "id": "o-1"}, False),
    ],
    ids=["group", "selection", "filter", "message"],
)
def test_the_form_offers_a_bulk_edit_on_many_messages_and_headers_on_one(
    bulk_orders, personas, params, bulk
):
    html = login(personas["operator"]).get(_new(**params)).content.decode()

    assert ('id="bulk-edit"' in html) is bulk
    assert ('id="patch-preview-submit"' in html) is bulk
    assert ('name="edited_headers"' in html) is not bulk


def test_a_bulk_edit_is_sent_only_after_its_preview_was_shown(bulk_orders, personas):
    operator = login(personas["operator"])

    first = operator.post(GROUP_FORM, _posted())  # "send", but never previewed
    assert first.status_code == 200
    assert not ActionRequest.objects.exists()
    html = first.content.decode()
    assert 'id="patch-preview"' in html and 'id="patch-previewed"' in html
    fingerprint = first.context["form"].data["previewed"]
    assert f'name="previewed" value="{fingerprint}"' in html

    # Changed since its preview: previewed again, not sent.
    other = [{"op": "add", "path": "/currency", "value": "USD"}]
    again = operator.post(GROUP_FORM, _posted(other, previewed=fingerprint))
    assert again.status_code == 200
    assert not ActionRequest.objects.exists()
    assert again.context["form"].data["previewed"] != fingerprint

    sent = operator.post(
        GROUP_FORM, _posted(other, previewed=again.context["form"].data["previewed"])
    )
    assert sent.status_code == 302
    assert json.loads(ActionRequest.objects.get().patch) == other


def test_a_preview_needs_no_comment_yet_the_request_does(bulk_orders, personas):
    operator = login(personas["operator"])

    previewed = operator.post(GROUP_FORM, _posted(comment="", preview="1"))
    assert previewed.status_code == 200
    assert not previewed.context["form"].errors
    assert len(previewed.context["preview"]) == 5
    fingerprint = previewed.context["form"].data["previewed"]
    sent = operator.post(GROUP_FORM, _posted(comment="", previewed=fingerprint))
    assert sent.status_code == 400
    assert "comment" in sent.context["form"].errors
    assert not ActionRequest.objects.exists()


def test_a_patch_that_is_not_one_is_refused_beside_its_field(bulk_orders, personas):
    response = login(personas["operator"]).post(GROUP_FORM, {**_posted(), "patch": '{"op": "x"}'})

    assert response.status_code == 400
    assert "A JSON Patch is a list of operations" in " ".join(
        response.context["form"].errors["patch"]
    )


def test_a_patch_is_for_reprocessing_and_said_so_above_the_form(bulk_orders, personas):
    response = login(personas["operator"]).post(GROUP_FORM, _posted(action="fail"))

    assert response.status_code == 400
    said = " ".join(response.context["form"].non_field_errors())
    assert "A bulk edit (a JSON Patch) is for reprocessing" in said


def test_the_selection_bar_and_the_groups_page_lead_to_the_bulk_edit(bulk_orders, personas):
    operator = login(personas["operator"])

    kept = operator.post(reverse("selection-post"), {"ids": ["o-1", "o-3"], "then": "edit"})
    assert kept.status_code == 302 and kept.url.endswith("#bulk-edit")
    key = dict(pair.split("=") for pair in kept.url.split("?")[1].split("#")[0].split("&"))
    assert selection_ids(key=key["selection"], owner=personas["operator"]) == ["o-1", "o-3"]
    page = operator.get(reverse("group-detail", args=[GROUP])).content.decode()
    assert f'href="{GROUP_FORM.replace("&", "&amp;")}#bulk-edit"' in page


def _why(personas, findings):
    now = timezone.now()
    return LakeQuery.objects.create(
        requester=personas["operator"],
        kind=LakeQuery.WHY,
        criteria={"group": GROUP},
        body_criteria=True,
        status=LakeQuery.DONE,
        started_at=now,
        finished_at=now,
        analysis={
            "failures_in_group": 3,
            "failures_read": 3,
            "deliveries_in_period": 10,
            "deliveries_read": 10,
            "sampled": False,
            "findings": findings,
        },
    )


def _finding(kind, name, value=None, absent=False):
    return {
        "kind": kind,
        "name": name,
        "value": value,
        "absent": absent,
        "failures": 3,
        "failures_total": 3,
        "deliveries": 0,
        "deliveries_total": 10,
        "lift": 11.0,
    }


def test_a_finding_about_a_field_offers_a_bulk_edit_that_starts_from_its_patch(
    bulk_orders, personas
):
    _why(
        personas,
        [_finding("field", "currency", absent=True), _finding("header_value", "x-region", "eu")],
    )
    operator = login(personas["operator"])

    page = operator.get(reverse("group-detail", args=[GROUP])).content.decode()
    skeleton = [{"op": "add", "path": "/currency", "value": None}]
    link = f"{GROUP_FORM}&patch={quote(json.dumps(skeleton), safe='')}#bulk-edit"
    assert page.count('class="finding-edit"') == 1  # a header is not a body's field
    assert f'href="{link.replace("&", "&amp;")}"' in page
    form = operator.get(link.split("#")[0]).context["form"]
    assert form["patch"].value() == json.dumps(skeleton)
    # Who may not ask for requests is not offered one.
    page = login(personas["auditor"]).get(reverse("group-detail", args=[GROUP]))
    assert 'class="finding-edit"' not in page.content.decode()


def test_the_request_page_shows_the_patch_and_the_preview_the_diffs_to_who_reads_bodies(
    bulk_orders, personas
):
    request = action_request_create(
        actor=personas["operator"],
        scope={"kind": "group", "group": GROUP},
        action=Action(kind="reprocess", patch=ADD_CURRENCY),
        comment="euros",
    )
    url = reverse("request-detail", args=[request.id])

    approver = login(personas["approver"]).get(url).content.decode()
    assert "&quot;path&quot;: &quot;/currency&quot;" in approver
    assert approver.count('class="patch-preview-row applies"') == 4
    assert 'id="preview-diff-1"' in approver
    viewer = login(personas["viewer"]).get(url).content.decode()
    assert viewer.count('class="patch-preview-row applies"') == 4
    assert 'id="preview-diff-1"' not in viewer and 'id="patch-preview-no-bodies"' in viewer
