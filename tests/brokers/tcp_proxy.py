"""A TCP forwarder that a test can cut, to play a broker outage without stopping the broker
(other suites share it).

`TcpProxy()` listens on 127.0.0.1:<free port> and forwards each connection to the upstream.
`cut()` ends every forwarded connection and refuses new ones; `restore()` listens again on the
same port. `stall()` keeps connections open but holds what the upstream sends (a broker that
stopped answering) until `restore()`. All three work from a process forked after the proxy
started (a handler in an isolation batch): its threads live in the process that started it, so
a child asks that one through a control socket and waits for the answer.
"""

import contextlib
import os
import socket
import threading

_CHUNK = 65536


class TcpProxy:
    def __init__(self, upstream=("127.0.0.1", 5672)):
        self.upstream = upstream
        self._owner = os.getpid()
        self._lock = threading.Lock()
        self._sockets = set()
        self._listener = None
        self._flowing = threading.Event()
        self._flowing.set()
        self.port = 0
        self._listen()
        self._control = socket.create_server(("127.0.0.1", 0))
        self._control_port = self._control.getsockname()[1]
        threading.Thread(target=self._serve_control, daemon=True).start()

    @property
    def url_host(self):
        return f"127.0.0.1:{self.port}"

    def cut(self):
        """End every connection through the proxy and refuse new ones, until `restore()`."""
        if os.getpid() != self._owner:
            return self._ask(b"cut")
        with self._lock:
            if self._listener is not None:
                _shut(self._listener)
                self._listener = None
            for sock in self._sockets:
                _shut(sock)
            self._sockets.clear()

    def stall(self):
        """Hold everything the upstream sends, until `restore()`."""
        if os.getpid() != self._owner:
            return self._ask(b"stall")
        self._flowing.clear()

    def restore(self):
        """Accept connections again, on the same port, and let held data through."""
        if os.getpid() != self._owner:
            return self._ask(b"restore")
        with self._lock:
            if self._listener is None:
                self._listen()
        self._flowing.set()

    def close(self):
        self.cut()
        _shut(self._control)

    def _listen(self):
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut: the listener was shut
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                _shut(client)
                continue
            server.settimeout(None)
            with self._lock:
                if self._listener is not listener:  # cut while this one was being accepted
                    _shut(client)
                    _shut(server)
                    return
                self._sockets.update((client, server))
            for source, sink, held in ((client, server, False), (server, client, True)):
                threading.Thread(target=self._pump, args=(source, sink, held), daemon=True).start()

    def _pump(self, source, sink, held):
        try:
            while data := source.recv(_CHUNK):
                while held and not self._flowing.wait(0.05):
                    if sink.fileno() < 0:  # cut while held
                        return
                sink.sendall(data)
        except OSError:
            pass
        # One side ended: end the other too, as a broker that went away would.
        for sock in (source, sink):
            _shut(sock)
            with self._lock:
                self._sockets.discard(sock)

    def _serve_control(self):
        while True:
            try:
                conn, _ = self._control.accept()
            except OSError:
                return
            with conn:
                command = conn.recv(64)
                if command == b"cut":
                    self.cut()
                elif command == b"stall":
                    self.stall()
                elif command == b"restore":
                    self.restore()
                conn.sendall(b"ok")

    def _ask(self, command):
        with socket.create_connection(("127.0.0.1", self._control_port), timeout=10) as conn:
            conn.sendall(command)
            if conn.recv(2) != b"ok":
                raise RuntimeError(f"the proxy did not {command.decode()}")


def _shut(sock):
    # shutdown, not only close: a forked child may hold a copy of the socket, and close() ends
    # a connection only when the last copy goes; shutdown ends it at once (and stops a listener).
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
