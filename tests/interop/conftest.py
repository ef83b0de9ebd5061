"""Fixtures for the client interop tests: a real `lakestream serve` process on
loopback ports with its own data directory, driven by the real Python clients."""
import os
import signal
import socket
import subprocess
import time

import pytest

BIN = os.environ.get("LAKESTREAM_BIN", os.path.join(os.path.dirname(__file__), "..", "..", "bin", "lakestream"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One lakestream node. start() waits until it accepts connections."""

    def __init__(self, data_dir, log_path):
        self.data_dir = str(data_dir)
        self.log_path = str(log_path)
        self.port = free_port()
        self.http_port = free_port()
        self.proc = None

    @property
    def uri(self):
        return f"grpc://127.0.0.1:{self.port}"

    def start(self, *extra):
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(
            [BIN, "serve", "--data-dir", self.data_dir, "--listen", f"127.0.0.1:{self.port}",
             "--http", f"127.0.0.1:{self.http_port}", *extra],
            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited at start: {self.tail()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)  # polling a port: there is no event to wait on
        raise RuntimeError(f"server did not listen in 60 s: {self.tail()}")

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout)
        code = self.proc.returncode if self.proc else None
        self.proc = None
        return code

    def kill9(self):
        return self.stop(signal.SIGKILL)

    def tail(self, n=20):
        try:
            with open(self.log_path) as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path / "data", tmp_path / "server.log").start()
    yield s
    s.stop()


@pytest.fixture
def conn(server):
    import adbc_driver_flightsql.dbapi as flightsql
    c = flightsql.connect(server.uri, autocommit=True)
    yield c
    c.close()
