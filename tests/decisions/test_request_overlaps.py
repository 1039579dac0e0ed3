"""Approvers see overlaps: next to the approve button and in the API, how many of a request's
frozen messages other open requests (pending, approved, running, canary) hold too, with a link
to each and what each shares; final requests are not counted. And the merge underneath, on
hand-written id batches."""

import re
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.urls import reverse

from console.decisions import overlaps
from console.decisions.models import ActionRequest as R
from console.decisions.overlaps import Unsorted, request_overlaps, shared_counts
from console.lake.services import lake
from tests.browse.conftest import api, login


def _request(requests, numbers, status, by="operator"):
    """A request on the messages m-<number>, put in `status` (the approval policy aside)."""
    r = requests.make({"kind": "selection", "ids": [f"m-{n:02d}" for n in numbers]}, by=by)
    R.objects.filter(id=r.id).update(status=status)
    r.refresh_from_db()
    return r


@pytest.fixture
def crowd(requests):
    """The request under review (m-00 … m-05, pending) and others: pending (m-00, m-01), running
    (m-01 … m-03), done (m-04), rejected (m-05), and a canary sharing nothing (m-08)."""
    return SimpleNamespace(
        mine=_request(requests, range(6), R.PENDING),
        pending=_request(requests, [0, 1], R.PENDING, by="approver"),
        running=_request(requests, [1, 2, 3], R.RUNNING),
        done=_request(requests, [4], R.DONE),
        rejected=_request(requests, [5], R.REJECTED),
        canary=_request(requests, [8], R.CANARY),
    )


def _overlaps_html(page):
    html = page.content.decode()
    match = re.search(r'<div id="overlaps".*?</div>', html, re.S)
    assert match, "the request page shows no overlaps"
    return match.group(0)


def _text(html):
    return " ".join(re.sub(r"<[^>]+>", "", html).split())


def _detail(r):
    return reverse("request-detail", args=[r.id])


# --- The approval screen -------------------------------------------------------------------------


def test_the_approval_page_counts_the_messages_open_requests_share_and_links_each(crowd, personas):
    page = login(personas["approver"]).get(_detail(crowd.mine))

    assert page.status_code == 200
    box = _overlaps_html(page)
    p, q = crowd.pending.id, crowd.running.id
    assert _text(box) == (
        f"4 of these 6 messages are also in request #{p} (pending, 2 shared) and request #{q} "
        "(running, 3 shared): approving may skip them. Whichever request runs later finds them "
        "decided already and skips them."
    )
    links = re.findall(r'class="overlap-link" href="([^"]+)"', box)
    assert links == [_detail(crowd.pending), _detail(crowd.running)]
    for final in (crowd.done, crowd.rejected):
        assert _detail(final) not in box
    # Told next to the approve button, before it.
    html = page.content.decode()
    assert html.index('id="overlaps"') < html.index('id="approve-form"')


def test_the_requester_sees_the_overlaps_of_their_waiting_request_too(crowd, personas):
    page = login(personas["operator"]).get(_detail(crowd.mine))

    assert "4 of these 6 messages are also in" in _text(_overlaps_html(page))


def test_a_request_sharing_only_with_final_requests_is_told_none_do(crowd, requests, personas):
    R.objects.filter(id=crowd.mine.id).update(status=R.WITHDRAWN)
    alone = _request(requests, [4, 5, 9], R.PENDING)  # m-04 done, m-05 rejected, m-05 withdrawn

    page = login(personas["approver"]).get(_detail(alone))

    assert _text(_overlaps_html(page)) == (
        "None of the 3 other open requests compared holds any of these 3 messages."
    )
    assert 'class="overlap-link"' not in _overlaps_html(page)


def test_overlaps_are_told_only_while_a_request_waits_for_approval(crowd, personas):
    R.objects.filter(id=crowd.mine.id).update(status=R.APPROVED)

    page = login(personas["approver"]).get(_detail(crowd.mine))

    assert page.status_code == 200
    assert 'id="overlaps"' not in page.content.decode()


def test_only_the_newest_open_requests_are_compared_and_the_page_says_so(
    crowd, personas, monkeypatch
):
    monkeypatch.setattr(overlaps, "COMPARED_MAX", 2)  # the canary and the running one

    box = _overlaps_html(login(personas["approver"]).get(_detail(crowd.mine)))

    assert f"3 of these 6 messages are also in request #{crowd.running.id} (running" in _text(box)
    assert _detail(crowd.pending) not in box
    assert _text(box).endswith(
        "Compared with the 2 newest open requests only: 1 older open request was not compared."
    )


def test_an_open_request_whose_ids_are_out_of_order_is_named_and_the_others_still_counted(
    crowd, personas
):
    store = lake()
    relpath = f"{store.new_dir('requests', 'scope')}/ids.parquet"
    (store.root / relpath).parent.mkdir(parents=True)
    pq.write_table(pa.table({"message_id": ["m-03", "m-01", "m-02"]}), store.root / relpath)
    R.objects.filter(id=crowd.running.id).update(ids_path=relpath)

    box = _overlaps_html(login(personas["approver"]).get(_detail(crowd.mine)))

    text = _text(box)
    assert f"2 of these 6 messages are also in request #{crowd.pending.id} (pending, 2" in text
    assert text.endswith(
        f"Not compared (their frozen ids could not be read in order): request #{crowd.running.id}."
    )


def test_an_open_request_whose_ids_file_is_gone_is_named_as_not_compared(crowd):
    R.objects.filter(id=crowd.pending.id).update(ids_path="requests/gone/ids.parquet")

    found = request_overlaps(request=crowd.mine)

    assert (found.total, found.unknown) == (3, [crowd.pending.id])
    assert [(o.request_id, o.shared) for o in found.rows] == [(crowd.running.id, 3)]


# --- The API -------------------------------------------------------------------------------------


def test_the_api_gives_each_overlapping_request_what_it_shares_and_the_total(crowd, personas):
    data = api(personas["approver"]).get(f"/api/v1/requests/{crowd.mine.id}").json()

    assert data["overlaps"] == [
        {
            "request": crowd.pending.id,
            "status": "pending",
            "shared": 2,
            "url": reverse("api-request-detail", args=[crowd.pending.id]),
        },
        {
            "request": crowd.running.id,
            "status": "running",
            "shared": 3,
            "url": reverse("api-request-detail", args=[crowd.running.id]),
        },
    ]
    assert data["overlaps_total"] == 4
    assert data["overlaps_not_compared"] == 0
    assert data["overlaps_unknown"] == []


def test_the_api_counts_no_final_request_and_tells_overlaps_only_while_pending(
    crowd, requests, personas
):
    R.objects.filter(id=crowd.mine.id).update(status=R.WITHDRAWN)
    alone = _request(requests, [4, 5, 9], R.PENDING)
    client = api(personas["viewer"])

    data = client.get(f"/api/v1/requests/{alone.id}").json()
    assert (data["overlaps"], data["overlaps_total"]) == ([], 0)

    done = client.get(f"/api/v1/requests/{crowd.done.id}").json()
    assert (done["overlaps"], done["overlaps_total"], done["overlaps_not_compared"]) == (
        None,
        None,
        None,
    )


# --- The merge -----------------------------------------------------------------------------------


def _batches(*batches):
    return [pa.array(batch, pa.string()) for batch in batches]


def test_the_merge_counts_what_each_stream_shares_across_batch_boundaries():
    mine = _batches(["a", "c", "e"], ["g", "i"])
    others = {
        1: _batches(["b", "c"], ["d", "e", "f", "g"]),  # c, e, g
        2: _batches(["i"], ["j", "k"]),  # i
        3: _batches(["c", "g"]),  # c, g: both also in 1
        4: [],
    }

    assert shared_counts(mine, others) == (4, {1: 3, 2: 1, 3: 2, 4: 0})


def test_the_merge_reads_the_others_no_further_than_the_last_id_of_its_own():
    pulled = []

    def other():
        for batch in (["a"], ["b"], ["c"], ["d"]):
            pulled.append(batch)
            yield pa.array(batch, pa.string())

    assert shared_counts(_batches(["b"]), {1: other()}) == (1, {1: 1})
    assert pulled == [["a"], ["b"], ["c"]]


def test_the_merge_names_a_stream_out_of_order_rather_than_miss_what_it_shares():
    with pytest.raises(Unsorted) as other:
        shared_counts(_batches(["a", "z"]), {7: _batches(["b", "a"])})
    assert other.value.key == 7

    with pytest.raises(Unsorted) as own:
        shared_counts(_batches(["b"], ["a"]), {1: _batches(["z"])})
    assert own.value.key is None
