"""R18: the messages already stored get what ingest now does to every message that arrives: a
producer's header named in the product's namespaces is kept under a foreign name, and a request's
redrive target moves from its header into the version's `redrive_target`
(console.retention.stored_headers)."""

import json

from django.db import migrations


def set_aside(apps, schema_editor):
    from console.retention.stored_headers import stored_headers_set_aside

    BrokerSource = apps.get_model("queues", "BrokerSource")
    ActionRequest = apps.get_model("decisions", "ActionRequest")
    sources = {s.name: (s.kind, s.queue.name) for s in BrokerSource.objects.select_related("queue")}
    targets = {
        r.id: json.dumps(r.redrive_target, sort_keys=True)
        for r in ActionRequest.objects.exclude(redrive_target=None).only("id", "redrive_target")
        if r.redrive_target
    }
    stored_headers_set_aside(sources=sources, request_targets=targets)


class Migration(migrations.Migration):
    # The lake's rewrite takes its own transaction, after reading every messages commit.
    atomic = False

    dependencies = [
        ("retention", "0001_initial"),
        ("ingest", "0003_demo_nats_redis_fed_at"),
        ("lake", "0009_handed_back"),
        ("queues", "0004_source_kinds_options_lag"),
        ("decisions", "0007_redrive_target"),
        ("readmodels", "0010_queue_oldest_quarantined"),
    ]

    operations = [migrations.RunPython(set_aside, migrations.RunPython.noop, atomic=False)]
