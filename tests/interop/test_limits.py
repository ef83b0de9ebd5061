"""The limits of result streams and queries, through the real clients: a
pyarrow.flight client that stops reading is cut off after --stall-timeout
with RESOURCE_EXHAUSTED naming it, a query past --query-timeout fails naming
it, and the node goes on serving."""
import re
import time
import urllib.request

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from conftest import Server
from util import gen_rows, ingest, query


def metric(server, name):
    with urllib.request.urlopen(f"http://127.0.0.1:{server.http_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    m = re.search(r"^" + re.escape(name) + r" (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def wait_for(cond, timeout=60):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.05)  # polling the node's metrics: there is no event to wait on


@pytest.fixture
def limited(tmp_path):
    s = Server(tmp_path / "data", tmp_path / "server.log").start(
        "--stream-memory", "64MiB", "--stream-window", "1MiB", "--stall-timeout", "2s",
        "--query-timeout", "1s", "--engine-memory", "256MiB")
    yield s
    s.stop()


def test_stalled_reader_is_cut_off(limited):
    import adbc_driver_flightsql.dbapi as flightsql
    with flightsql.connect(limited.uri, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE ev (id BIGINT, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ) WITH ('log.compression'='none')")
        cur.close()
        for i in range(10):
            ingest(conn, "ev", gen_rows(i * 50_000, 50_000))
        # BDP probing off: the client's window stays at 64 KiB, so the node
        # feels the stall at once rather than after the window has grown.
        client = fl.FlightClient(limited.uri, generic_options=[("grpc.http2.bdp_probe", 0)])
        info = client.get_flight_info(fl.FlightDescriptor.for_path("ev"))
        reader = client.do_get(info.endpoints[0].ticket)
        assert reader.schema.names == ["id", "amount", "kind", "ts"]
        wait_for(lambda: metric(limited, 'lakestream_streams_cut_total{reason="stalled"}') == 1)
        # pyarrow reports RESOURCE_EXHAUSTED as ArrowInvalid.
        with pytest.raises(pa.ArrowException, match=r"resource exhausted.*the client read nothing for 2s \(the stall timeout\)"):
            reader.read_all()
        # A reader that reads gets every row, and a query answers.
        assert client.do_get(info.endpoints[0].ticket).read_all().num_rows == 500_000
        assert query(conn, "SELECT count(*) AS n FROM ev").column("n")[0].as_py() == 500_000
        wait_for(lambda: metric(limited, "lakestream_stream_memory_used_bytes") == 0)
        client.close()


def test_query_timeout(limited):
    import adbc_driver_flightsql.dbapi as flightsql
    with flightsql.connect(limited.uri, autocommit=True) as conn:
        with pytest.raises(Exception, match=r"query timeout of 1s exceeded"):
            query(conn, "SELECT count(*) FROM range(1000000) a, range(10000000) b WHERE a.range + b.range > 0")
        assert query(conn, "SELECT current_setting('memory_limit') AS m").column("m")[0].as_py() == "256.0 MiB"
