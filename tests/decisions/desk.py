"""A `desk`: real ingest and delivery runs on the real Spark session put messages in quarantine,
a refresh indexes them, and requests are created, approved and executed through the services,
as the console and the API do."""

import pyarrow.compute as pc

from console.browse.lineage import message_body_lineage
from console.browse.selectors import message_view
from console.decisions.execution import action_request_execute
from console.decisions.services import Action, action_request_approve, action_request_create
from console.lake.models import LakeCommit
from console.lake.services import lake
from console.queues.models import Queue
from console.readmodels.execution import read_models_refresh
from console.readmodels.models import MessageIndex
from tests.delivery.conftest import Engine


class Desk(Engine):
    def __init__(self, spark, personas):
        super().__init__(spark)
        self.personas = personas

    def queue_exists(self, name):
        return Queue.objects.filter(name=name).exists()

    def refresh(self, *, full=False):
        return read_models_refresh(full=full, spark=self.spark)

    def quarantine(self, queue, bodies, **fields):
        """Ingest and deliver until idle, then index: the ids given end NDLV if their handler
        says so."""
        ids = self.ingest(queue, bodies, **fields)
        self.deliver_until_idle()
        self.refresh()
        return ids

    def request(
        self,
        scope,
        kind="reprocess",
        *,
        approve=True,
        rate_limit=None,
        canary=0,
        steps=None,
        refailure_threshold=None,
        **a,
    ):
        request = action_request_create(
            actor=self.personas["operator"],
            scope=scope,
            action=Action(kind=kind, **a),
            comment="the handler is fixed",
            rate_limit=rate_limit,
            canary=canary,
            steps=steps,
            refailure_threshold=refailure_threshold,
        )
        if approve and request.status == "pending":
            request = action_request_approve(actor=self.personas["approver"], request=request)
        return request

    def execute(self, request, **kwargs):
        return action_request_execute(request_id=request.id, spark=self.spark, **kwargs)

    def decision_events(self, request_id=None):
        """Every event a request wrote (all requests' when None), from the committed ledger."""
        paths = list(LakeCommit.objects.filter(dataset="events").values_list("path", flat=True))
        events = lake().read_arrow("events", paths)
        run_ids = pc.starts_with(events.column("run_id"), "request:")
        if request_id is not None:
            run_ids = pc.equal(events.column("run_id"), f"request:{request_id}")
        return events.filter(pc.fill_null(run_ids, False)).to_pylist()

    def index_state(self, message_id):
        return MessageIndex.objects.get(message_id=message_id).state

    def lineage(self, message_id, *, with_bodies=True):
        """The message's body versions, as its page reads them (console.browse.lineage)."""
        view = message_view(message_id=message_id)
        return message_body_lineage(
            message_id=message_id,
            history=view.history,
            enqueued_at=view.stored["enqueued_at"],
            with_bodies=with_bodies,
        )


def make_desk(spark, personas, settings):
    """For a test module's `desk` fixture (with transactional_db and lake_root)."""
    settings.REFRESH_ON_COMMIT = False
    return Desk(spark, personas)


def quarantine_directly(queue, ids, *, at, group="g-permanent"):
    """Many messages put in NDLV fast, for tests about what comes after: real ingest, then one
    events commit of their quarantine (as a delivery run would write it) and their index rows
    (as a refresh would), without running the handlers and the refresh for each."""
    import pyarrow as pa
    from django.db import transaction

    from console.ingest.services import messages_ingest
    from console.lake.services import epoch_allocate, lake_commit_record
    from workers.lake.schema import EVENT_SCHEMA

    for start in range(0, len(ids), 50_000):
        batch = ids[start : start + 50_000]
        result = messages_ingest(
            records=[{"id": m, "queue": queue, "body": "permanent"} for m in batch], source="test"
        )
        assert result.accepted == len(batch), result.errors
    n = len(ids)
    epoch = epoch_allocate(purpose="test quarantine")
    columns = {
        "message_id": ids,
        "epoch": [epoch] * n,
        "step": list(range(n)),
        "at": [at] * n,
        "from_state": ["DLNG"] * n,
        "to_state": ["NDLV"] * n,
        "queue": [queue] * n,
        "attempt": [1] * n,
        "delivery_count": [1] * n,
        "candidate": [False] * n,
        "batch_limit": [0] * n,
        "body_version": [1] * n,
        "reason": ["permanent failure: missing field: customer"] * n,
        "exception_type": ["PermanentFailure"] * n,
    }
    table = pa.table(
        {f.name: columns.get(f.name, pa.nulls(n, f.type)) for f in EVENT_SCHEMA},
        schema=EVENT_SCHEMA,
    )
    store = lake()
    path = store.new_dir("events", "test-quarantine")
    store.write_arrow(table, path)
    with transaction.atomic():
        lake_commit_record(
            dataset="events", path=path, row_count=n, idempotency_key=path, epoch=epoch
        )
    MessageIndex.objects.bulk_create(
        [
            MessageIndex(
                message_id=m,
                queue=queue,
                original_queue=queue,
                state="NDLV",
                delivery_count=1,
                first_failure_at=at,
                last_failure_at=at,
                reason="permanent failure: missing field: customer",
                exception_type="PermanentFailure",
                group_id=group,
                body_path="",
                enqueued_at=at,
                updated_at=at,
            )
            for m in ids
        ],
        batch_size=5000,
    )
