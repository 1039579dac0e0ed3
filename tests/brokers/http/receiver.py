"""A real HTTP receiver for the delivery tests: http.server in a thread, on a free port of
127.0.0.1, answering from a script and keeping every request it received as it arrived."""

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Answer:
    status: int
    body: bytes = b""
    headers: dict = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering: longer than the handler's timeout plays a hang
    cut: bool = False  # promise more body than is sent, then close: an answer broken midway


@dataclass
class Received:
    method: str
    path: str
    headers: list  # (name, value) as sent, in order; values decoded as Latin-1 by http.server
    body: bytes
    client: tuple  # (host, port) of the connection: the same port means a reused connection

    def header(self, name):
        values = [v for n, v in self.headers if n.lower() == name.lower()]
        assert len(values) <= 1, f"{name} sent {len(values)} times"
        return values[0] if values else None


class Receiver:
    """Answers each request with the next Answer of `script` (the last one once the script runs
    out)."""

    def __init__(self, script):
        self.script = list(script)
        self.received = []
        self.lock = threading.Lock()
        receiver = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, so connection reuse shows

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with receiver.lock:
                    receiver.received.append(
                        Received(
                            "POST", self.path, list(self.headers.items()), body, self.client_address
                        )
                    )
                    answer = (
                        receiver.script[0] if len(receiver.script) == 1 else receiver.script.pop(0)
                    )
                if answer.delay:
                    time.sleep(answer.delay)
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                promised = len(answer.body) + (1000 if answer.cut else 0)
                self.send_header("Content-Length", str(promised))
                self.end_headers()
                self.wfile.write(answer.body)
                if answer.cut:
                    self.close_connection = True

            def log_message(self, *args):
                pass  # the test output stays quiet

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hooks/orders"
        # A short poll: shutdown() waits for it, after every test.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
