"""A three-node cluster (docs/cluster.md) driven by ADBC: an idempotent
writer ingests while the bucket's leader is killed with SIGKILL and then
restarted; every acknowledged row is on every node afterwards, once."""
import re
import time

import adbc_driver_flightsql.dbapi as flightsql
import pyarrow as pa

from conftest import Server, free_port
from util import query

HEADER = "adbc.flight.sql.rpc.call_header."
LEADER = re.compile(r"its leader is node (n\d)")


class Cluster:
    def __init__(self, tmp_path, n=3):
        self.meta = f"sqlite://{tmp_path}/meta.db"  # nodes on one host may share a SQLite store
        self.gossip = [free_port() for _ in range(n)]
        self.nodes = {}
        self.conns = {}
        for i in range(n):
            node_id = f"n{i + 1}"
            self.nodes[node_id] = Server(tmp_path / node_id, tmp_path / f"{node_id}.log")
            self.start(node_id, first=(i == 0))

    def args(self, node_id, first):
        i = int(node_id[1:]) - 1
        args = ["--node-id", node_id, "--gossip", f"127.0.0.1:{self.gossip[i]}", "--gossip-timing", "local",
                "--meta", self.meta]
        if not first:
            others = [f"127.0.0.1:{p}" for j, p in enumerate(self.gossip) if j != i]
            args += ["--join", ",".join(others)]
        return args

    def start(self, node_id, first=False):
        self.nodes[node_id].start(*self.args(node_id, first))

    def conn(self, node_id):
        if node_id not in self.conns:
            self.conns[node_id] = flightsql.connect(self.nodes[node_id].uri, autocommit=True)
        return self.conns[node_id]

    def drop_conn(self, node_id):
        c = self.conns.pop(node_id, None)
        if c is not None:
            try:
                c.close()
            except Exception:
                pass

    def wait_members(self, alive, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if all(query(self.conn(n), "SELECT count(*) AS c FROM lakestream.nodes WHERE state = 'alive'")
                       .column("c")[0].as_py() == alive for n in self.running()):
                    return
            except Exception:
                pass
            time.sleep(0.05)  # gossip converging: polled
        raise AssertionError("the nodes did not see each other")

    def running(self):
        return [n for n, s in self.nodes.items() if s.proc is not None]

    def stop(self):
        for n in list(self.conns):
            self.drop_conn(n)
        for s in self.nodes.values():
            s.stop()


def ingest_as(conn, table, data, writer, seq):
    cur = conn.cursor()
    try:
        cur.adbc_statement.set_options(**{HEADER + "lakestream-writer-id": str(writer),
                                          HEADER + "lakestream-writer-seq": str(seq)})
        return cur.adbc_ingest(table, data, mode="append")
    finally:
        cur.close()


def test_ingest_through_a_leader_kill(tmp_path):
    c = Cluster(tmp_path)
    try:
        c.wait_members(3)
        # Each node keeps its own table definitions with a SQLite store:
        # the same statement on each gives the same table.
        for n in c.nodes:
            query(c.conn(n), "CREATE TABLE t (id BIGINT, v VARCHAR) WITH ('bucket.num' = '1')")
        writer, calls, rows_per_call = 4242, 60, 100
        acked, leader, killed, retries = [], "n1", None, 0
        kill_at, restart_at = 15, 35
        seq = 0
        deadline = time.monotonic() + 240
        while seq < calls:
            assert time.monotonic() < deadline, f"no progress: {len(acked)} calls acknowledged"
            if seq == kill_at and killed is None and leader in c.running():
                killed = leader
                c.drop_conn(killed)
                c.nodes[killed].kill9()
                kill_at = -1
            if seq == restart_at and killed is not None:
                c.start(killed)
                restart_at = -1
            data = pa.table({"id": pa.array(range(seq * rows_per_call, (seq + 1) * rows_per_call), pa.int64()),
                             "v": pa.array(["x"] * rows_per_call)})
            try:
                ingest_as(c.conn(leader), "t", data, writer, seq)
                acked.append(seq)
                seq += 1
            except Exception as e:  # not the leader, the leader gone, an election under way: send again
                retries += 1
                c.drop_conn(leader)
                m = LEADER.search(str(e))
                if m and m.group(1) in c.running():
                    leader = m.group(1)
                else:
                    live = c.running()
                    leader = live[(live.index(leader) + 1) % len(live)] if leader in live else live[0]
                time.sleep(0.02)  # an election takes a moment: do not spin
        assert killed is not None and restart_at == -1
        c.wait_members(3)
        want = len(acked) * rows_per_call
        for n in c.nodes:
            deadline = time.monotonic() + 60
            while True:
                got = query(c.conn(n), "SELECT count(*) AS c, count(DISTINCT id) AS d FROM t")
                rows, distinct = got.column("c")[0].as_py(), got.column("d")[0].as_py()
                if rows >= want or time.monotonic() > deadline:
                    break
                time.sleep(0.05)  # the restarted node catching up: polled
            assert (rows, distinct) == (want, want), f"{n}: {rows} rows, {distinct} distinct, want {want}"
        print(f"\ncluster ingest: {len(acked)} calls acknowledged ({want} rows), {retries} sends retried, "
              f"leader {killed} killed and restarted")
    finally:
        c.stop()
