"""Why do these fail? What sets a failure group's messages apart from the messages of the same
queue that were delivered in the same period: the traits each message has (its body's JSON
fields and their values, its headers and their values, its content type, its producer, its
size), counted on both sides and ranked by how much more often they occur among the failures.

A trait is (kind, name, value). A message "has" a field or a header when it is present; that it
is absent is counted from the totals (absent = messages - present), never by listing every
field every message lacks, so the cost follows what the messages hold. A finding says, for
example, "`currency` is absent in 97 % of these failures and 0.2 % of deliveries".

Ranked by the difference of the two shares (a trait of every failure and no delivery first), then
by lift (the failures' share over the deliveries', with one delivery added to each side so a
trait no delivery has still ranks by its share). A trait of fewer than MIN_SHARE of the failures
is left out: it explains too few of them.

Pure transforms on DataFrames, no Django: the job around them reads the lake and writes the
findings (console.lakequery runs it as a lake query, with its permissions, scope and audit).
"""

from dataclasses import asdict, dataclass, field
from datetime import datetime

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import MapType, StringType

from workers.engine.states import DLVD
from workers.jobs.state import extract_messages, extract_state
from workers.jobs.trait_kinds import (
    CONTENT_TYPE,
    FIELD,
    HEADER,
    HEADER_VALUE,
    NOT_JSON,
    PRESENCE_KINDS,
    SENDER,
    SIZE,
    VALUE,
)

# A value longer than this is not a trait: ids, timestamps and free text say nothing shared.
VALUE_MAX = 64
MIN_SHARE = 0.1
FINDINGS_KEPT = 50

_TEXT_MAP = MapType(StringType(), StringType())


@dataclass(frozen=True)
class Finding:
    kind: str
    name: str
    value: str | None  # None for presence kinds; "absent" findings say so in `absent`
    absent: bool
    failures: int  # failures with the trait
    failures_total: int
    deliveries: int
    deliveries_total: int

    @property
    def failures_share(self):
        return self.failures / self.failures_total if self.failures_total else 0.0

    @property
    def deliveries_share(self):
        return self.deliveries / self.deliveries_total if self.deliveries_total else 0.0

    @property
    def lift(self):
        # One delivery added to each side: a trait no delivery has ranks by its failures' share.
        return self.failures_share / ((self.deliveries + 1) / (self.deliveries_total + 1))

    @property
    def score(self):
        return (round(self.failures_share - self.deliveries_share, 6), self.lift)


def _size_class(size):
    """A size in bytes as its power-of-two class: "2^10" holds 1,024 to 2,047 bytes (the page
    says it in bytes)."""
    return F.when(size.isNull(), F.lit("unknown")).otherwise(
        F.concat(
            F.lit("2^"), F.floor(F.log2(F.greatest(size, F.lit(1)))).cast("int").cast("string")
        )
    )


def traits(messages: DataFrame) -> DataFrame:
    """(message_id, kind, name, value) of every trait of each message, each once. `messages`
    has message_id, body (bytes), headers (JSON object text), content_type, sender, body_size."""
    text = F.expr("try_cast(body AS STRING)")
    parsed = messages.select(
        "message_id",
        F.from_json(text, _TEXT_MAP).alias("fields"),
        F.from_json(F.col("headers"), _TEXT_MAP).alias("header_map"),
        "content_type",
        "sender",
        _size_class(F.col("body_size")).alias("size"),
    )
    fields = parsed.select("message_id", F.explode("fields").alias("name", "value"))
    headers = parsed.select("message_id", F.explode("header_map").alias("name", "value"))

    def named(pairs, presence, valued):
        """A (name, value) pair's two traits: the name present, and its value when short."""
        value = F.col("value")
        return [
            pairs.select(
                "message_id",
                F.lit(presence).alias("kind"),
                "name",
                F.lit(None).cast("string").alias("value"),
            ),
            pairs.select(
                "message_id",
                F.lit(valued).alias("kind"),
                "name",
                F.when(F.length(value) <= VALUE_MAX, value).alias("value"),
            ).where(F.col("value").isNotNull()),
        ]

    parts = [
        *named(fields, FIELD, VALUE),
        *named(headers, HEADER, HEADER_VALUE),
        parsed.select(
            "message_id",
            F.lit(CONTENT_TYPE).alias("kind"),
            F.lit("").alias("name"),
            F.coalesce("content_type", F.lit("")).alias("value"),
        ),
        parsed.select(
            "message_id",
            F.lit(SENDER).alias("kind"),
            F.lit("").alias("name"),
            F.coalesce("sender", F.lit("")).alias("value"),
        ),
        parsed.select(
            "message_id",
            F.lit(SIZE).alias("kind"),
            F.lit("").alias("name"),
            F.col("size").alias("value"),
        ),
        parsed.where(F.col("fields").isNull()).select(
            "message_id",
            F.lit(NOT_JSON).alias("kind"),
            F.lit("").alias("name"),
            F.lit(None).cast("string").alias("value"),
        ),
    ]
    every = parts[0]
    for part in parts[1:]:
        every = every.unionByName(part)
    return every.dropDuplicates(["message_id", "kind", "name", "value"])


def trait_counts(traits: DataFrame) -> DataFrame:
    """(kind, name, value, n): how many messages have each trait."""
    return traits.groupBy("kind", "name", "value").agg(F.countDistinct("message_id").alias("n"))


def findings(
    failure_counts, delivery_counts, failures_total, deliveries_total, *, kept=FINDINGS_KEPT
):
    """The traits that set the failures apart, best first: from the rows of `trait_counts` on
    each side (lists of (kind, name, value, n)) and the messages read on each side."""
    failed = {(k, n, v): c for k, n, v, c in failure_counts}
    delivered = {(k, n, v): c for k, n, v, c in delivery_counts}
    found = []
    for key in failed.keys() | delivered.keys():
        kind, name, value = key
        present_f, present_d = failed.get(key, 0), delivered.get(key, 0)
        found.append(
            Finding(
                kind, name, value, False, present_f, failures_total, present_d, deliveries_total
            )
        )
        if kind in PRESENCE_KINDS:
            found.append(
                Finding(
                    kind,
                    name,
                    None,
                    True,
                    failures_total - present_f,
                    failures_total,
                    deliveries_total - present_d,
                    deliveries_total,
                )
            )
    found = [
        f for f in found if f.failures_share >= MIN_SHARE and f.failures_share > f.deliveries_share
    ]
    found.sort(key=lambda f: (f.score, f.kind, f.name, f.value or ""), reverse=True)
    return found[:kept]


# --- The job ----------------------------------------------------------------------------------


@dataclass
class WhyParams:
    ids_path: str  # Parquet of the group's member ids (message_id), as the message index has them
    queue: str  # the group's queue: the deliveries compared are this queue's
    since: datetime | None  # the period: the group's first failure ...
    until: datetime | None  # ... to its latest
    sample: int  # at most this many messages read on each side
    snapshot_paths: list
    event_paths: list
    message_paths: list
    seed: int = 0


@dataclass
class WhyResult:
    failures_in_group: int = 0  # members found in the lake's state
    deliveries_in_period: int = 0
    failures_read: int = 0  # the messages the findings count (a sample above `sample`)
    deliveries_read: int = 0
    findings: list = field(default_factory=list)  # Finding, best first

    def as_dict(self):
        return {
            **{k: v for k, v in asdict(self).items() if k != "findings"},
            "sampled": self.failures_read < self.failures_in_group
            or self.deliveries_read < self.deliveries_in_period,
            "findings": [
                {
                    **asdict(f),
                    "failures_share": round(f.failures_share, 4),
                    "deliveries_share": round(f.deliveries_share, 4),
                    "lift": round(f.lift, 2),
                }
                for f in self.findings
            ],
        }


def _sampled(frame, count, sample, seed):
    """At most `sample` of `count` rows, drawn at random (the same ones for the same seed)."""
    if count <= sample:
        return frame
    return frame.sample(fraction=min(1.0, 1.2 * sample / count), seed=seed).limit(sample)


def _with_bodies(rows, messages):
    """Each row's message as it was at its current body version."""
    return rows.join(
        messages,
        (rows.message_id == messages.message_id) & (rows.body_version == messages.version),
    ).select(messages["*"])


def run_why_fail(spark, params: WhyParams) -> WhyResult:
    state = extract_state(spark, params.snapshot_paths, params.event_paths).select(
        "message_id",
        "queue",
        "to_state",
        F.coalesce("body_version", F.lit(1)).alias("body_version"),
        "at",
    )
    members = spark.read.parquet(params.ids_path).select("message_id")
    failures = state.join(F.broadcast(members), "message_id")
    deliveries = state.where((F.col("queue") == params.queue) & (F.col("to_state") == DLVD))
    if params.since is not None:
        deliveries = deliveries.where(F.col("at") >= F.lit(params.since))
    if params.until is not None:
        deliveries = deliveries.where(F.col("at") <= F.lit(params.until))
    result = WhyResult(failures_in_group=failures.count(), deliveries_in_period=deliveries.count())
    failures = _sampled(failures, result.failures_in_group, params.sample, params.seed)
    deliveries = _sampled(deliveries, result.deliveries_in_period, params.sample, params.seed)
    messages = extract_messages(spark, params.message_paths).select(
        "message_id", "version", "body", "headers", "content_type", "sender", "body_size"
    )
    sides = []
    for rows in (failures, deliveries):
        read = _with_bodies(rows, messages).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            total = read.count()
            counts = [tuple(r) for r in trait_counts(traits(read)).collect()]
        finally:
            read.unpersist()
        sides.append((total, counts))
    (result.failures_read, failed), (result.deliveries_read, delivered) = sides
    result.findings = findings(failed, delivered, result.failures_read, result.deliveries_read)
    return result
