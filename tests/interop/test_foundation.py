"""Foundation: exact ingest and read-back through ADBC, kill -9 loses no
acknowledged batch, bad input refused, metadata, plain Flight."""
import os
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as fl
import pytest

from conftest import BIN, Server
from util import dir_bytes, gen_rows, ingest, query

ROWS = int(os.environ.get("LAKESTREAM_TEST_ROWS", "5000000"))

EVENTS = ("CREATE TABLE events (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ) "
          "WITH ('bucket.num'='4', 'bucket.key'='id', 'log.compression'='zstd')")


def test_ingest_and_read_back_exact(server, conn):
    query(conn, EVENTS)
    sent = []
    t0 = time.perf_counter()
    for start in range(0, ROWS, 65536):
        part = gen_rows(start, min(65536, ROWS - start))
        assert ingest(conn, "events", part) == part.num_rows
        sent.append(part)
    ingest_s = time.perf_counter() - t0
    want = pa.concat_tables(sent)

    t0 = time.perf_counter()
    got = query(conn, "SELECT * FROM events")
    scan_s = time.perf_counter() - t0
    assert got.num_rows == ROWS
    assert got.schema.field("ts").type == pa.timestamp("us", tz="UTC")
    got = got.sort_by("id")
    for col in want.column_names:
        assert got.column(col).equals(want.column(col)), col

    raw = want.nbytes
    disk = dir_bytes(os.path.join(server.data_dir, "tables"))
    print(f"\n{ROWS} rows: ingest {ingest_s:.2f}s ({ROWS / ingest_s:,.0f} rows/s), scan {scan_s:.2f}s "
          f"({ROWS / scan_s:,.0f} rows/s); raw Arrow {raw / 1e6:.1f} MB, zstd log {disk / 1e6:.1f} MB "
          f"(x{raw / disk:.2f} smaller)")
    assert disk < raw * 0.8, f"zstd log of {disk} bytes is not well below the raw {raw} bytes"


def test_projection_and_prepared(conn):
    query(conn, EVENTS)
    ingest(conn, "events", gen_rows(0, 10_000))
    t = query(conn, 'SELECT kind, "id" FROM events')
    assert t.column_names == ["kind", "id"]
    assert sorted(t.column("id").to_pylist()) == list(range(10_000))
    cur = conn.cursor()
    cur.adbc_prepare("SELECT id FROM default.events")
    assert cur.description is None or [d[0] for d in cur.description] == ["id"]
    cur.execute("SELECT id FROM default.events")
    assert cur.fetch_arrow_table().num_rows == 10_000
    cur.close()


def test_bad_input_refused_table_unchanged(server, conn):
    query(conn, EVENTS)
    ingest(conn, "events", gen_rows(0, 1000))
    ts = pa.array([0], type=pa.timestamp("us", tz="UTC"))
    bad = {
        "wrong type": (pa.table({"id": pa.array(["x"]), "amount": [1.0], "kind": ["a"], "ts": ts}), "id"),
        "missing NOT NULL column": (pa.table({"amount": pa.array([1.0])}), "id"),
        "unknown column": (pa.table({"id": pa.array([1], pa.int64()), "colour": ["red"]}), "colour"),
        "null in NOT NULL column": (pa.table({"id": pa.array([None], pa.int64())}), "id"),
    }
    for name, (data, column) in bad.items():
        with pytest.raises(Exception) as e:
            ingest(conn, "events", data)
        assert column in str(e.value), f"{name}: error does not name the column: {e.value}"
    with pytest.raises(Exception, match="not found|does not exist"):
        ingest(conn, "no_such_table", gen_rows(0, 10))
    assert query(conn, "SELECT id FROM events").num_rows == 1000


def test_safe_widening_is_cast(conn):
    query(conn, "CREATE TABLE w (a BIGINT, b DOUBLE, t TIMESTAMPTZ)")
    data = pa.table({"a": pa.array([1, 2], pa.int32()), "b": pa.array([1.5, 2.5], pa.float32()),
                     "t": pa.array([1000, 2000], pa.timestamp("ms", tz="UTC"))})
    ingest(conn, "w", data)
    got = query(conn, "SELECT * FROM w").sort_by("a")
    assert got.column("a").type == pa.int64() and got.column("a").to_pylist() == [1, 2]
    assert got.column("t").cast(pa.int64()).to_pylist() == [1_000_000, 2_000_000]


def test_ingest_modes(conn):
    data = gen_rows(0, 100)
    ingest(conn, "m", data, mode="create")
    with pytest.raises(Exception, match="already exists"):
        ingest(conn, "m", data, mode="create")
    ingest(conn, "m", data, mode="append")
    ingest(conn, "m", data, mode="create_append")
    assert query(conn, "SELECT id FROM m").num_rows == 300
    ingest(conn, "m", gen_rows(0, 7), mode="replace")
    assert query(conn, "SELECT id FROM m").num_rows == 7
    ingest(conn, "m2", data, mode="create_append")
    assert query(conn, "SELECT id FROM m2").num_rows == 100


def test_ddl_errors_are_clear(conn):
    query(conn, EVENTS)
    for sql, want in [
        (EVENTS, "already exists"),
        ("CREATE TABLE x (a FANCYINT)", "FANCYINT"),
        ("CREATE TABLE x (a INT, a INT)", "more than once"),
        ("CREATE TABLE x (a INT) WITH ('bucket.nmu'='2')", "bucket.nmu"),
        ("CREATE TABLE x (a INT) WITH ('bucket.num'='zero')", "bucket.num"),
        ("DROP TABLE nope", "nope"),
        ("CREATE TABLE (", "syntax error"),
    ]:
        with pytest.raises(Exception) as e:
            query(conn, sql)
        assert want.lower() in str(e.value).lower(), f"{sql}: {e.value}"
    query(conn, "ALTER TABLE events ADD COLUMN note VARCHAR")
    ingest(conn, "events", gen_rows(0, 3))
    t = query(conn, "SELECT id, note FROM events")
    assert t.num_rows == 3 and t.column("note").null_count == 3
    query(conn, "CREATE DATABASE sales")
    query(conn, "CREATE TABLE sales.orders (id BIGINT)")
    query(conn, "DROP TABLE sales.orders")
    query(conn, "DROP DATABASE sales")


def test_metadata(conn):
    query(conn, EVENTS)
    objs = conn.adbc_get_objects(depth="all").read_all().to_pylist()
    tables = [t["table_name"] for c in objs for s in (c["catalog_db_schemas"] or []) for t in (s["db_schema_tables"] or [])]
    assert "events" in tables
    schema = conn.adbc_get_table_schema("events", db_schema_filter="default")
    assert schema.names == ["id", "amount", "kind", "ts"]
    assert schema.field("id").type == pa.int64() and not schema.field("id").nullable
    assert "TABLE" in conn.adbc_get_table_types()
    info = conn.adbc_get_info()
    assert info["vendor_name"] == "Lakestream"


def test_plain_flight_put_and_get(server, conn):
    query(conn, EVENTS)
    client = fl.FlightClient(f"grpc://127.0.0.1:{server.port}")
    data = gen_rows(0, 5000)
    writer, reader = client.do_put(fl.FlightDescriptor.for_path("default", "events"), data.schema)
    writer.write_table(data, max_chunksize=1000)
    writer.done_writing()
    assert reader.read().to_pybytes() == b"5000"
    writer.close()
    info = client.get_flight_info(fl.FlightDescriptor.for_path("events"))
    assert info.total_records == 5000
    got = pa.concat_tables([client.do_get(ep.ticket).read_all() for ep in info.endpoints])
    assert sorted(got.column("id").to_pylist()) == list(range(5000))


def test_sql_cli(server, conn):
    query(conn, EVENTS)
    ingest(conn, "events", gen_rows(0, 3))
    out = subprocess.run([BIN, "sql", "--addr", f"127.0.0.1:{server.port}", "SELECT id, kind FROM events"],
                         capture_output=True, text=True, check=True).stdout
    assert "(3 rows)" in out and "kind" in out
    out = subprocess.run([BIN, "sql", "--addr", f"127.0.0.1:{server.port}", "--format", "csv", "SELECT id FROM events"],
                         capture_output=True, text=True, check=True).stdout
    assert sorted(out.split()) == ["0", "1", "2", "id"]


CRASH_INGEST = r"""
import os, sys
sys.path.insert(0, sys.argv[3])
import pyarrow as pa
import adbc_driver_flightsql.dbapi as flightsql
from util import gen_rows
conn = flightsql.connect(sys.argv[1], autocommit=True)
with open(sys.argv[2], "a") as f:
    b = 0
    while True:
        t = gen_rows(b * 10000, 10000)
        t = t.append_column("batch", pa.array([b] * t.num_rows, type=pa.int64()))
        cur = conn.cursor(); cur.adbc_ingest("crash", t, mode="append"); cur.close()
        f.write(f"{b}\n"); f.flush(); os.fsync(f.fileno())
        b += 1
"""


def test_kill9_during_ingest_loses_no_acknowledged_batch(tmp_path):
    import adbc_driver_flightsql.dbapi as flightsql
    srv = Server(tmp_path / "data", tmp_path / "server.log").start()
    c = flightsql.connect(srv.uri, autocommit=True)
    query(c, "CREATE TABLE crash (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ, batch BIGINT) "
             "WITH ('bucket.num'='3', 'bucket.key'='id')")
    c.close()
    acked = tmp_path / "acked"
    writer = subprocess.Popen([sys.executable, "-c", CRASH_INGEST, srv.uri, str(acked), os.path.dirname(__file__)],
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not acked.exists() or len(acked.read_text().split()) < 30):
        time.sleep(0.05)  # waiting for another process's progress
    srv.kill9()
    writer.wait(30)
    srv.start()
    c = flightsql.connect(srv.uri, autocommit=True)
    try:
        got = query(c, "SELECT batch, id FROM crash")
        by_batch = got.group_by("batch").aggregate([("id", "count"), ("id", "count_distinct")]).to_pylist()
        counts = {r["batch"]: (r["id_count"], r["id_count_distinct"]) for r in by_batch}
        want = {int(x) for x in acked.read_text().split()}
        assert len(want) >= 30
        missing = sorted(want - set(counts))
        partial = {b: v for b, v in counts.items() if v != (10000, 10000)}
        assert not missing, f"acknowledged batches missing after kill -9: {missing[:10]}"
        assert not partial, f"batches partly visible or doubled: {list(partial.items())[:10]}"
        # Still writable after recovery.
        ingest(c, "crash", query(c, "SELECT * FROM crash").slice(0, 10))
    finally:
        c.close()
        srv.stop()


def test_sigterm_shuts_down_cleanly(tmp_path):
    import adbc_driver_flightsql.dbapi as flightsql
    srv = Server(tmp_path / "data", tmp_path / "server.log").start()
    c = flightsql.connect(srv.uri, autocommit=True)
    query(c, EVENTS)
    ingest(c, "events", gen_rows(0, 1000))
    c.close()
    assert srv.stop() == 0, srv.tail()
    srv.start()
    c = flightsql.connect(srv.uri, autocommit=True)
    assert query(c, "SELECT id FROM events").num_rows == 1000
    c.close()
    srv.stop()
