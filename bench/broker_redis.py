"""Redis Streams for bench_brokers, on database 12 (never flushed: only the run's own keys are
deleted): dead letters made its way (entries read by a group's consumer and never acknowledged,
read again until delivered MIN_DELIVERIES times, as workers/demo/redis_streams.py plays it); the
bare client loops beside the product's (XAUTOCLAIM + XACK; pipelined XADD) and what confirms a
redrive (XLEN of the stream).

Three identical streams: `p` for the product, `b` for the bare loops, `f` for the redrive's floor
(drained by the product, then reprocessed to a handler that does nothing); `close` deletes them
and their parking streams."""

import time

from bench.support import REDIS_SERVER

URL = "redis://127.0.0.1:6379/12"
URL_ENV = "BENCH_REDIS_URL"
HOST, PORT = "127.0.0.1", 6379
GROUP, WORKER, BARE = "billing", "billing-worker", "bench-bare"
# The source's threshold: delivered this often and idle this long make a dead letter.
MIN_DELIVERIES = 3
MIN_IDLE_MS = 1000
PAGE = 10_000
CLAIM = 2500
WINDOW = 1000


def _raw(response, **options):
    return response


def _entries(reply):
    """The entries of an XREADGROUP reply of one stream: a map in RESP3, a list in RESP2."""
    if not reply:
        return []
    return next(iter(reply.values())) if isinstance(reply, dict) else reply[0][1]


class Redis:
    kind = "redis"
    title = "Redis Streams"
    servers = REDIS_SERVER
    url, url_env = URL, URL_ENV
    sink = "workers.brokers.redis_streams.publisher"
    bare_drain_said = "redis-py XAUTOCLAIM + XACK"
    bare_publish_said = "redis-py pipelined XADD"

    def __init__(self, tag, body):
        import redis

        self.body = body
        self.streams = {b: f"bench:brokers:{tag}:{b}" for b in "pbf"}
        self.client = redis.Redis.from_url(URL, socket_timeout=60)
        # Replies as Redis sends them, as the product's source reads them.
        for command in ("XAUTOCLAIM", "XREADGROUP"):
            self.client.set_response_callback(command, _raw)
        for stream in self.streams.values():
            self.client.xgroup_create(stream, GROUP, id="$", mkstream=True)

    def _append(self, stream, n, extra=()):
        pipe = self.client.pipeline(transaction=False)
        for i in range(n):
            pipe.execute_command(
                "XADD", stream, "*", "body", self.body, "content-type", "text/plain", *extra
            )
            if (i + 1) % WINDOW == 0 or i + 1 == n:
                pipe.execute()
        return n

    def dead_letters(self, batch, n):
        """n entries read by the group's worker, which fails on each and reads its pending ones
        again until each was delivered MIN_DELIVERIES times, never acknowledging one."""
        stream = self.streams[batch]
        self._append(stream, n)
        for start in (">", *["0"] * (MIN_DELIVERIES - 1)):
            last = start
            while True:
                reply = self.client.execute_command(
                    "XREADGROUP", "GROUP", GROUP, WORKER, "COUNT", PAGE, "STREAMS", stream, last
                )
                entries = _entries(reply)
                if not entries:
                    break
                if last != ">":
                    last = entries[-1][0]
        time.sleep(MIN_IDLE_MS / 1000 + 0.1)

    def source(self, batch):
        return {
            "broker_queue": self.streams[batch],
            "options": {
                "group": GROUP,
                "min_deliveries": MIN_DELIVERIES,
                "min_idle_ms": MIN_IDLE_MS,
            },
        }

    def bare_drain(self, n):
        """Claim the b batch's pending entries (XAUTOCLAIM, CLAIM at a time) and acknowledge
        them (XACK), as the source acknowledges a batch once stored."""
        stream, start, taken = self.streams["b"], "0-0", 0
        while True:
            cursor, entries, *_ = self.client.execute_command(
                "XAUTOCLAIM", stream, GROUP, BARE, MIN_IDLE_MS, start, "COUNT", CLAIM
            )
            if entries:
                taken += self.client.execute_command(
                    "XACK", stream, GROUP, *(entry[0] for entry in entries)
                )
            start = cursor
            if cursor in (b"0-0", "0-0"):
                return taken

    def drained(self, batch, source):
        return self.client.xpending(self.streams[batch], GROUP)["pending"] == 0

    def origin_count(self):
        """Entries of the p batch's stream: drained ones stay (the source's `delete` is off)
        and each redrive appends one."""
        return self.client.xlen(self.streams["p"])

    def bare_publish(self, n):
        """n appends to the b batch's stream, pipelined WINDOW at a time, each with an id field
        as the sink writes."""
        return self._append(self.streams["b"], n, extra=("antidote-message-id", "bench-bare"))

    def close(self):
        keys = [
            s for stream in self.streams.values() for s in (stream, stream + ":antidote-refused")
        ]
        self.client.delete(*keys)
        self.client.close()


BROKER = Redis
