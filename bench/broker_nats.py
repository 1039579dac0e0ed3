"""NATS JetStream for bench_brokers: dead letters made its way (messages of a stream whose consumer
terminates each one, AckTerm: the server publishes a MSG_TERMINATED advisory and the message
stays in the stream), captured as the product's source captures them (its capture stream made
before, as workers/demo/nats.py makes it); the bare client loops beside the product's (read the
captured advisories, get each message by its sequence, acknowledge the advisory; publish with
JetStream acknowledgements, pipelined) and what confirms a redrive (the stream's message count).

Three identical streams: `p` for the product, `b` for the bare loops, `f` for the redrive's floor
(drained by the product, then reprocessed to a handler that does nothing); `close` deletes them
and their capture streams. nats-py is asyncio: this class runs a private event loop."""

import asyncio
import base64
import contextlib
import json

from bench.support import NATS_SERVER

URL = "nats://127.0.0.1:4222"
URL_ENV = "BENCH_NATS_URL"
HOST, PORT = "127.0.0.1", 4222
WORKER = "bench-worker"
BARE = "bench-bare"
# As the product's source: advisories out at once, message gets in flight, publishes waiting.
MAX_ACK_PENDING = 5000
FETCH = 2500
GETS_IN_FLIGHT = 256
PUBLISH_WINDOW = 1000
HEADERS = {"Content-Type": "text/plain"}


class Nats:
    kind = "nats"
    title = "NATS JetStream"
    servers = NATS_SERVER
    url, url_env = URL, URL_ENV
    sink = "workers.brokers.nats.publisher"
    bare_drain_said = "nats-py: advisories, get by sequence, ack"
    bare_publish_said = "nats-py publish_async, acknowledged"

    def __init__(self, tag, body):
        import nats

        from workers.brokers.nats.source import capture_stream_name

        self.body = body
        self.loop = asyncio.new_event_loop()
        self.streams = {b: f"BENCH_{tag.upper()}_{b.upper()}" for b in "pbf"}
        self.subjects = {b: f"bench.{tag}.{b}.orders" for b in "pbf"}
        self.captures = {b: capture_stream_name(s) for b, s in self.streams.items()}
        self.nc = self._run(nats.connect(URL, allow_reconnect=False, max_reconnect_attempts=1))
        self.js = self.nc.jetstream(timeout=30, publish_async_max_pending=PUBLISH_WINDOW)
        for batch in self.streams:
            self._run(self._streams_add(batch))

    def _run(self, coroutine, timeout=600):
        return self.loop.run_until_complete(asyncio.wait_for(coroutine, timeout))

    async def _streams_add(self, batch):
        """The stream, its giving-up consumer, and the capture stream the source would make."""
        from nats.js import api

        from workers.brokers.nats.source import advisory_subjects, capture_stream_config

        stream = self.streams[batch]
        await self.js.add_stream(
            api.StreamConfig(
                name=stream, subjects=[self.subjects[batch]], storage=api.StorageType.FILE
            )
        )
        await self.js.add_stream(
            capture_stream_config(self.captures[batch], advisory_subjects(stream))
        )
        await self._consumer_add(stream, WORKER, ack_wait=60)

    async def _consumer_add(self, stream, durable, **options):
        """A durable pull consumer that acknowledges each message, MAX_ACK_PENDING at once."""
        from nats.js import api

        await self.js.add_consumer(
            stream,
            api.ConsumerConfig(
                durable_name=durable,
                ack_policy=api.AckPolicy.EXPLICIT,
                max_ack_pending=MAX_ACK_PENDING,
                **options,
            ),
        )

    def dead_letters(self, batch, n):
        self._run(self._publish(self.subjects[batch], n, dedupe=None))
        self._run(self._terminate(batch, n))
        while self._messages(self.captures[batch]) < n:
            self._run(asyncio.sleep(0.2))

    async def _publish(self, subject, n, *, dedupe):
        """n messages published with JetStream acknowledgements, PUBLISH_WINDOW awaited at once;
        with `dedupe`, each with a Nats-Msg-Id as a redrive carries one."""
        futures = []
        for i in range(n):
            headers = dict(HEADERS)
            if dedupe:
                headers["Nats-Msg-Id"] = f"{dedupe}:{i}"
            futures.append(await self.js.publish_async(subject, self.body, headers=headers))
        await asyncio.gather(*futures)
        return len(futures)

    async def _terminate(self, batch, n):
        """The consumer that gives up: AckTerm on every message it is handed."""
        sub = await self.js.pull_subscribe_bind(durable=WORKER, stream=self.streams[batch])
        done = 0
        while done < n:
            for msg in await sub.fetch(min(FETCH, n - done), timeout=5):
                await msg.term()
                done += 1
        await self.nc.flush()

    def _messages(self, stream):
        return self._run(self.js.stream_info(stream)).state.messages

    def source(self, batch):
        return {"broker_queue": self.streams[batch]}

    def bare_drain(self, n):
        return self._run(self._bare_drain(n))

    async def _bare_drain(self, n):
        """Read the b batch's captured advisories through a durable pull consumer, get each
        message by its sequence (GETS_IN_FLIGHT at once), acknowledge the advisories."""
        capture = self.captures["b"]
        await self._consumer_add(capture, BARE)
        sub = await self.js.pull_subscribe_bind(durable=BARE, stream=capture)
        limiter = asyncio.Semaphore(GETS_IN_FLIGHT)
        taken = 0
        while taken < n:
            msgs = await sub.fetch(min(FETCH, n - taken), timeout=5)
            advisories = [json.loads(msg.data) for msg in msgs]
            await asyncio.gather(
                *(self._get(a["stream"], a["stream_seq"], limiter) for a in advisories)
            )
            for msg in msgs:
                await msg.ack()
            await self.nc.flush()
            taken += len(msgs)
        return taken

    async def _get(self, stream, seq, limiter):
        async with limiter:
            reply = await self.nc.request(
                f"$JS.API.STREAM.MSG.GET.{stream}", json.dumps({"seq": seq}).encode(), timeout=30
            )
        return base64.b64decode(json.loads(reply.data)["message"]["data"])

    def drained(self, batch, source):
        # The source's durable consumer on the capture stream, named after the source.
        info = self._run(self.js.consumer_info(self.captures[batch], "antidote-" + source))
        return info.num_pending == 0 and info.num_ack_pending == 0

    def origin_count(self):
        """Messages in the p batch's stream: drained ones stay (the source's `remove` is off)
        and each redriven one is added."""
        return self._messages(self.streams["p"])

    def bare_publish(self, n):
        return self._run(self._publish(self.subjects["b"], n, dedupe="bench-bare"))

    def close(self):
        for name in (*self.streams.values(), *self.captures.values()):
            # Already gone, or the server is: nothing left to clean.
            with contextlib.suppress(Exception):
                self._run(self.js.delete_stream(name), timeout=30)
        try:
            self._run(self.nc.close(), timeout=10)
        finally:
            self.loop.close()


BROKER = Nats
