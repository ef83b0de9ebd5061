"""Endpoints across a cluster (docs/flight.md, "Endpoints in a cluster"):
a table spread over three nodes (one replica per bucket) is planned on
one node with pyarrow.flight and read from each endpoint's location;
ADBC on another node reads the same rows; a ticket taken to the wrong
node is refused naming the right one. And lakestream.subscribe() over a
kill -9 of a bucket's leader: every stored row delivered once."""
import re
import subprocess
import threading
import time

import pyarrow.flight as fl
import pytest

from conftest import BIN
from test_cluster import Cluster
from util import query

lakestream = pytest.importorskip("lakestream", reason="the package of python/ (make venv installs it)")
from lakestream._client import statement_query  # noqa: E402


def create_everywhere(c, sql):
    # Each node keeps its own table definitions with a SQLite store: the
    # same statement on each gives the same table.
    for n in c.nodes:
        query(c.conn(n), sql)


def leaders(c, on):
    rows = query(c.conn(on), "SELECT bucket, leader FROM lakestream.buckets ORDER BY bucket").to_pylist()
    return {r["bucket"]: r["leader"] for r in rows}


def insert_on(c, node, sql, deadline):
    while True:
        try:
            query(c.conn(node), sql)
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            c.drop_conn(node)
            time.sleep(0.05)  # the node opening its replicas: retried


def test_endpoints_on_every_node(tmp_path):
    c = Cluster(tmp_path)
    try:
        c.wait_members(3)
        create_everywhere(c, "CREATE TABLE t (id BIGINT) WITH ('bucket.num' = '6', 'bucket.replicas' = '1', "
                             "'min.insync.replicas' = '1')")
        deadline = time.monotonic() + 60
        while True:
            led = leaders(c, "n1")
            if len(led) == 6 and all(led.values()):
                break
            assert time.monotonic() < deadline, f"buckets not placed: {led}"
            time.sleep(0.05)  # placement: polled
        assert set(led.values()) == {"n1", "n2", "n3"}, f"buckets placed on {led}: want all three nodes"
        # Each node writes to the buckets it leads.
        per = 1000
        for i, n in enumerate(["n1", "n2", "n3"]):
            insert_on(c, n, f"INSERT INTO t SELECT range + {i * per} FROM range({per})", deadline)
        total = 3 * per
        uris = {n: f"grpc+tcp://127.0.0.1:{s.port}" for n, s in c.nodes.items()}

        # pyarrow.flight: GetFlightInfo on n1 lists endpoints on all three.
        client = fl.FlightClient(c.nodes["n1"].uri)
        info = client.get_flight_info(fl.FlightDescriptor.for_command(statement_query("SELECT id FROM t")))
        located = [str(ep.locations[0].uri.decode() if isinstance(ep.locations[0].uri, bytes) else ep.locations[0].uri)
                   for ep in info.endpoints]
        assert set(located) == set(uris.values()), f"endpoints at {located}, want {uris}"
        # Fetched from their locations they give every row once.
        seen = {}
        for ep, loc in zip(info.endpoints, located):
            for v in fl.FlightClient(loc).do_get(ep.ticket).read_all().column("id").to_pylist():
                seen[v] = seen.get(v, 0) + 1
        assert len(seen) == total and set(seen.values()) == {1}, \
            f"{len(seen)} distinct of {total}, repeated: {[k for k, v in seen.items() if v > 1][:5]}"
        # A ticket taken to a node that does not hold its buckets.
        owner = {u: n for n, u in uris.items()}
        ep, loc = info.endpoints[0], located[0]
        wrong = next(n for n in uris if uris[n] != loc)
        with pytest.raises(fl.FlightUnavailableError, match=re.escape(f"read it from node {owner[loc]} at {loc}")):
            fl.FlightClient(c.nodes[wrong].uri).do_get(ep.ticket).read_all()

        # ADBC on n3 reads the same rows (the driver follows the locations).
        got = query(c.conn("n3"), "SELECT id FROM t").column("id").to_pylist()
        assert sorted(got) == list(range(total))
        # So does `lakestream sql` on n2.
        out = subprocess.run([BIN, "sql", "--addr", f"127.0.0.1:{c.nodes['n2'].port}", "SELECT id FROM t",
                              "--format", "csv"], capture_output=True, text=True, timeout=60, check=True).stdout
        assert sorted(int(v) for v in out.split()[1:]) == list(range(total)), out[:200]
        print(f"\nendpoints: {len(info.endpoints)} on {sorted(set(located))}; {total} rows read once each; "
              f"ADBC on n3 read {len(got)}")

        # subscribe() from 'latest' on n1 gets rows written after it
        # started, on every node, and none from before: each bucket's start
        # is its leader's end, not n1's (which holds no replica of most).
        fresh, errors = [], []

        def consume():
            try:
                for batch, _ in lakestream.subscribe(c.nodes["n1"].uri, "t", "latest", columns=["id"]):
                    fresh.extend(batch.column("id").to_pylist())
                    if len(fresh) >= 30:
                        return
            except Exception as e:  # reported by the test
                errors.append(e)

        th = threading.Thread(target=consume, daemon=True)
        th.start()
        next_id = total
        while th.is_alive() and time.monotonic() < deadline + 60:
            for n in ["n1", "n2", "n3"]:
                insert_on(c, n, f"INSERT INTO t SELECT range + {next_id} FROM range(10)", deadline + 60)
                next_id += 10
            th.join(timeout=0.2)  # the subscriber catching up: polled
        assert not errors, errors
        assert len(fresh) >= 30, f"received {len(fresh)} rows"
        assert min(fresh) >= total, f"a row from before the start: {sorted(fresh)[:5]}"
        assert len(set(fresh)) == len(fresh), "a row received twice"

    finally:
        c.stop()


def test_subscribe_across_a_leader_kill(tmp_path):
    c = Cluster(tmp_path)
    try:
        c.wait_members(3)
        create_everywhere(c, "CREATE TABLE s (id BIGINT) WITH ('bucket.num' = '2', 'bucket.replicas' = '3', "
                             "'min.insync.replicas' = '2')")
        deadline = time.monotonic() + 60
        while not (len(leaders(c, "n1")) == 2 and all(leaders(c, "n1").values())):
            assert time.monotonic() < deadline
            time.sleep(0.05)  # placement: polled
        got, stop = {}, threading.Event()
        errors = []

        def consume():
            try:
                uris = [s.uri for s in c.nodes.values()]
                for batch, _ in lakestream.subscribe(uris, "s", "earliest", columns=["id"], retry_seconds=0.1,
                                                     max_retry_seconds=0.5):
                    for v in batch.column("id").to_pylist():
                        got[v] = got.get(v, 0) + 1
                    if stop.is_set():
                        return
            except Exception as e:  # reported by the test
                errors.append(e)

        t = threading.Thread(target=consume, daemon=True)
        t.start()
        next_id = 0

        def write_round():
            # Each live node writes to the buckets it leads; a refused or
            # failed call may or may not be stored: the check compares with
            # the table itself.
            nonlocal next_id
            for n in c.running():
                try:
                    query(c.conn(n), f"INSERT INTO s SELECT range + {next_id} FROM range(20)")
                except Exception:
                    c.drop_conn(n)
                next_id += 20

        for _ in range(10):
            write_round()
        victim = leaders(c, "n1")[0]
        c.drop_conn(victim)
        c.nodes[victim].kill9()
        live = c.running()[0]
        deadline = time.monotonic() + 60
        while leaders(c, live)[0] in ("", None, victim):
            assert time.monotonic() < deadline, "no new leader"
            time.sleep(0.05)  # the election: polled
        for _ in range(10):
            write_round()
        stored = None
        deadline = time.monotonic() + 60
        while True:
            stored = query(c.conn(live), "SELECT id FROM s").column("id").to_pylist()
            if len(got) >= len(stored) or time.monotonic() > deadline or errors:
                break
            time.sleep(0.05)  # the subscriber catching up: polled
        stop.set()
        assert not errors, errors
        assert sorted(got) == sorted(stored), f"stored {len(stored)}, received {len(got)} distinct"
        assert set(got.values()) == {1}, "a row received twice"
        print(f"\nsubscribe across kill -9 of {victim}: {len(stored)} rows received once each")
    finally:
        c.stop()
