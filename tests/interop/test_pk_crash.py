"""kill -9 during a stream of upserts into a primary-key table: after restart
the state has every key at its last acknowledged write (or at the write in
flight, whole), and the changelog holds each applied write exactly once."""
import subprocess
import sys
import time

from conftest import Server
from util import query

KEYS = 2000

# Write w sets every key's w; it is recorded in the acked file once the
# ingest returned (acknowledged means durable).
CRASH_UPSERTS = r"""
import os, sys
import pyarrow as pa
import adbc_driver_flightsql.dbapi as flightsql
keys = int(sys.argv[3])
conn = flightsql.connect(sys.argv[1], autocommit=True)
with open(sys.argv[2], "a") as f:
    w = 0
    while True:
        t = pa.table({"id": pa.array(range(keys), pa.int64()), "w": pa.array([w] * keys, pa.int64()),
                      "pad": pa.array([f"write {w} of key {k}" for k in range(keys)])})
        cur = conn.cursor(); cur.adbc_ingest("up", t, mode="append"); cur.close()
        f.write(f"{w}\n"); f.flush(); os.fsync(f.fileno())
        w += 1
"""


def test_kill9_during_upserts_keeps_each_acknowledged_write_once(tmp_path):
    import adbc_driver_flightsql.dbapi as flightsql
    srv = Server(tmp_path / "data", tmp_path / "server.log").start()
    c = flightsql.connect(srv.uri, autocommit=True)
    query(c, "CREATE TABLE up (id BIGINT, w BIGINT, pad VARCHAR, PRIMARY KEY (id)) WITH ('bucket.num'='3')")
    c.close()
    acked = tmp_path / "acked"
    writer = subprocess.Popen([sys.executable, "-c", CRASH_UPSERTS, srv.uri, str(acked), str(KEYS)],
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not acked.exists() or len(acked.read_text().split()) < 20):
        time.sleep(0.05)  # waiting for another process's progress
    srv.kill9()
    writer.wait(30)
    last_acked = max(int(x) for x in acked.read_text().split())
    assert last_acked >= 19, "the writer made too little progress before the kill"
    srv.start()
    c = flightsql.connect(srv.uri, autocommit=True)
    try:
        st = query(c, "SELECT count(*) AS keys, min(w) AS lo, max(w) AS hi FROM up").to_pylist()[0]
        assert st["keys"] == KEYS
        # Every key at the same write: the last acknowledged, or the one in
        # flight at the kill, whole (a write is atomic).
        assert st["lo"] == st["hi"], f"keys at different writes after kill -9: {st}"
        applied = st["hi"] + 1
        assert applied - 1 in (last_acked, last_acked + 1), f"state at write {st['hi']}, last acknowledged {last_acked}"
        counts = {r["_change_type"]: r["n"] for r in
                  query(c, 'SELECT _change_type, count(*) AS n FROM "up$changelog" GROUP BY 1').to_pylist()}
        assert counts == {"+I": KEYS, "-U": KEYS * (applied - 1), "+U": KEYS * (applied - 1)}, counts
        # Each write's after-images once per key.
        dup = query(c, 'SELECT id, w, count(*) AS n FROM "up$changelog" WHERE _change_type IN (\'+I\', \'+U\') '
                       'GROUP BY id, w HAVING count(*) <> 1 LIMIT 5').to_pylist()
        assert not dup, f"writes doubled in the changelog: {dup}"
        # A lookup agrees with the state, and the table takes writes again.
        cur = c.cursor()
        cur.execute("SELECT w FROM up WHERE id = ?", (KEYS - 1,))
        assert cur.fetch_arrow_table().to_pylist() == [{"w": applied - 1}]
        cur.execute("UPDATE up SET w = -1 WHERE id < 10")
        assert cur.rowcount == 10
        cur.close()
        assert query(c, "SELECT count(*) AS n FROM up WHERE w = -1").column("n")[0].as_py() == 10
    finally:
        c.close()
        srv.stop()
        if writer.poll() is None:
            writer.kill()
