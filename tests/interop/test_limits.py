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


# --- One client's runaway queries next to another client's work -----------

BOMB = "SELECT a.range AS x, b.range AS y FROM range(100000) a, range(100000) b ORDER BY a.range * b.range DESC"
RUNAWAY_CTE = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT max(n) FROM r"


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def other_client_round(conn, i):
    """One round of the well-behaved client: a point query, a small scan
    query and a small ingest; returns each call's latency in seconds."""
    out = []
    t = time.perf_counter()
    assert query(conn, f"SELECT id FROM ev WHERE id = {i % 1000}").num_rows == 1
    out.append(time.perf_counter() - t)
    t = time.perf_counter()
    assert query(conn, "SELECT count(*) AS n FROM ev WHERE id < 100").column("n")[0].as_py() == 100
    out.append(time.perf_counter() - t)
    t = time.perf_counter()
    ingest(conn, "ev", gen_rows(1_000_000 + i * 10, 10))
    out.append(time.perf_counter() - t)
    return out


@pytest.fixture
def guarded(tmp_path):
    s = Server(tmp_path / "data", tmp_path / "server.log").start(
        "--engine-memory", "1GiB", "--query-memory-limit", "256MiB", "--query-timeout", "8s")
    yield s
    s.stop()


def test_bomb_and_runaway_cte_fail_while_others_go_on(guarded):
    """A cross-join bomb fails at the query memory limit, a recursive CTE
    that never ends at the query timeout, each with a message naming its
    flag; meanwhile another client's queries and ingests all succeed. The
    other client's latency is printed with and without the runaway queries
    (docs/benchmarks.md, "Resource limits")."""
    import threading
    import adbc_driver_flightsql.dbapi as flightsql
    with flightsql.connect(guarded.uri, autocommit=True) as other:
        cur = other.cursor()
        cur.execute("CREATE TABLE ev (id BIGINT, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ)")
        cur.close()
        ingest(other, "ev", gen_rows(0, 1000))
        for i in range(10):  # warm up
            other_client_round(other, i)

        quiet = []
        started = time.perf_counter()
        i = 0
        while time.perf_counter() - started < 8:
            quiet += other_client_round(other, i)
            i += 1

        errors = {}

        def bomber():
            with flightsql.connect(guarded.uri, autocommit=True) as bad:
                for name, sql in (("bomb", BOMB), ("cte", RUNAWAY_CTE)):
                    t = time.perf_counter()
                    try:
                        query(bad, sql)
                        errors[name] = None
                    except Exception as e:  # noqa: BLE001 (the error is what is checked)
                        errors[name] = e
                    errors[name + "_s"] = time.perf_counter() - t

        th = threading.Thread(target=bomber)
        th.start()
        loud = []
        while th.is_alive():
            loud += other_client_round(other, i)
            i += 1
        th.join()

        # ADBC names the gRPC code in its message: "(ResourceExhausted; DoGet…)".
        bomb, cte = str(errors["bomb"]), str(errors["cte"])
        assert re.search(r"query memory limit of 256 MiB exceeded.*--query-memory-limit", bomb, re.S), bomb
        assert re.search(r"resource.?exhausted", bomb, re.I), bomb
        assert re.search(r"query timeout of 8s exceeded.*--query-timeout", cte, re.S), cte
        assert re.search(r"deadline.?exceeded", cte, re.I), cte
        # The node is healthy, every ingest of the other client landed, and it still answers.
        with urllib.request.urlopen(f"http://127.0.0.1:{guarded.http_port}/healthz", timeout=10) as r:
            assert r.status == 200
        assert metric(guarded, 'lakestream_limit_hits_total{limit="query_memory_limit"}') == 1
        assert metric(guarded, 'lakestream_limit_hits_total{limit="query_timeout"}') == 1
        assert query(other, "SELECT count(*) AS n FROM ev").column("n")[0].as_py() == 1000 + 10 * (10 + i)  # the warm-up rounds too
        q50, q99 = percentile(quiet, 50) * 1e3, percentile(quiet, 99) * 1e3
        l50, l99 = percentile(loud, 50) * 1e3, percentile(loud, 99) * 1e3
        print(f"\nother client: {len(quiet)} calls alone p50 {q50:.2f} ms p99 {q99:.2f} ms; "
              f"{len(loud)} calls beside the bomb ({errors['bomb_s']:.1f} s) and the CTE ({errors['cte_s']:.1f} s) "
              f"p50 {l50:.2f} ms p99 {l99:.2f} ms; ratio p50 {l50 / q50:.2f}x p99 {l99 / q99:.2f}x")


def test_failed_login_in_audit_table(tmp_path):
    """A failed login shows in lakestream.audit, with the user and the
    client's address, and in audit.jsonl, without the password."""
    import json
    import os
    import adbc_driver_flightsql.dbapi as flightsql
    pw = tmp_path / "admin.pw"
    pw.write_text("admin-password-for-audit\n")
    s = Server(tmp_path / "data", tmp_path / "server.log").start("--auth", "on", "--admin-password-file", str(pw))
    try:
        client = fl.FlightClient(s.uri)
        with pytest.raises(fl.FlightUnauthenticatedError):
            client.authenticate_basic_token("admin", "not-the-password")
        client.close()
        with flightsql.connect(s.uri, db_kwargs={"username": "admin", "password": "admin-password-for-audit"}, autocommit=True) as conn:
            cur = conn.cursor()
            cur.execute("CREATE USER carol WITH PASSWORD 'carol-password-1'")
            cur.close()
            rows = query(conn, "SELECT kind, \"user\", peer, statement, outcome FROM lakestream.audit ORDER BY time").to_pylist()
        failed = [r for r in rows if r["kind"] == "login_failed"]
        assert len(failed) == 1 and failed[0]["user"] == "admin" and failed[0]["peer"].startswith("127.0.0.1:"), rows
        assert "wrong password" in failed[0]["outcome"]
        assert any(r["kind"] == "user" and r["statement"] == "CREATE USER carol WITH PASSWORD '***'" for r in rows), rows
    finally:
        s.stop()
    with open(os.path.join(s.data_dir, "audit.jsonl")) as f:
        text = f.read()
    assert "not-the-password" not in text and "carol-password" not in text and "admin-password" not in text
    kinds = [json.loads(line)["kind"] for line in text.splitlines()]
    assert kinds[:2] == ["login_failed", "login"], kinds


def test_concurrent_queries_capped_per_user(tmp_path):
    """With --max-queries-per-user 1, a user whose query is still streaming
    on one connection is refused a second on another connection, naming
    the flag; another user is not, and the first user runs again once the
    query ends."""
    import adbc_driver_flightsql.dbapi as flightsql
    pw = tmp_path / "admin.pw"
    pw.write_text("admin-password-for-limits\n")
    s = Server(tmp_path / "data", tmp_path / "server.log").start(
        "--auth", "on", "--admin-password-file", str(pw), "--max-queries-per-user", "1")

    def connect(user, password):
        return flightsql.connect(s.uri, db_kwargs={"username": user, "password": password}, autocommit=True)

    try:
        with connect("admin", "admin-password-for-limits") as admin:
            for u in ("alice", "bob"):
                cur = admin.cursor()
                cur.execute(f"CREATE USER {u} WITH PASSWORD '{u}-password-1'")
                cur.close()
        with connect("alice", "alice-password-1") as a1, connect("alice", "alice-password-1") as a2, \
                connect("bob", "bob-password-1") as b:
            running = a1.cursor()
            running.execute("SELECT range FROM range(1000000000)")  # streams while it is read
            reader = running.fetch_record_batch()
            assert reader.read_next_batch().num_rows > 0
            with pytest.raises(Exception, match=r"too many concurrent queries: user \"alice\" already runs 1.*--max-queries-per-user"):
                query(a2, "SELECT 1 AS x")
            assert query(b, "SELECT 2 AS x").column("x")[0].as_py() == 2
            reader.close()
            running.close()

            def alice_runs():
                try:
                    return query(a2, "SELECT 3 AS x").column("x")[0].as_py() == 3
                except Exception as e:  # noqa: BLE001 (refused until the node has closed the first stream)
                    assert "too many concurrent queries" in str(e)
                    return False
            wait_for(alice_runs)
    finally:
        s.stop()
