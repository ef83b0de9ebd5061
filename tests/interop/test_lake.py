"""Tiering into Iceberg, seen from outside: the rows a node tiers are exactly
the ingested rows when pyiceberg and DuckDB read the Iceberg table; the union
of lake and log tail stays exact while rounds run and across a kill -9; an
s3:// warehouse (a real moto server) works; DDL reaches the lake; the
tiering state shows in lakestream.tiering and in /metrics."""
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import adbc_driver_flightsql.dbapi as flightsql
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from conftest import Server, free_port
from util import ingest, query

try:  # pinned in tests/requirements.txt; checked in a fixture so a missing one is reported, not a collection error
    import duckdb
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError
    from pyiceberg.transforms import BucketTransform, DayTransform
    _IMPORT_ERROR = None
except ImportError as e:  # pragma: no cover - depends on the venv
    _IMPORT_ERROR = e

IN_CI = os.environ.get("CI") == "true"

COLUMNS = "id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ"
# The Arrow types each reader is expected to return for COLUMNS (pyiceberg 0.12
# reads long/double/string/timestamptz as these; Lakestream serves the same).
ARROW_TYPES = {"id": pa.int64(), "amount": pa.float64(), "kind": pa.string(), "ts": pa.timestamp("us", tz="UTC")}
TIERING_COLUMNS = ["table_name", "bucket", "tiered_offset", "log_end_offset", "lag_rows", "lag_seconds",
                   "last_round", "rounds", "rows_tiered", "last_commit_ms", "last_error", "committer"]


def need(what):
    """Fails (in CI) or skips (elsewhere) a test whose client package or tool is missing."""
    msg = f"{what} is missing from the test venv (tests/requirements.txt)"
    if IN_CI:
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture(autouse=True)
def _lake_clients():
    if _IMPORT_ERROR is not None:
        need(f"pyiceberg[sql-sqlite] / duckdb ({_IMPORT_ERROR})")


# ---------------------------------------------------------------- rows

BASE_TS = 1_709_251_200_000_000  # 2024-03-01T00:00:00Z in microseconds
PRE_EPOCH_TS = -3 * 86_400_000_000 + 12_345  # 1969-12-29: a negative day ordinal


def lake_rows(start, n):
    """Deterministic rows of COLUMNS with nulls in every nullable column and
    timestamps over several days (one id every 2 s), a few before 1970."""
    rng = np.random.default_rng(1000 + start)
    ids = np.arange(start, start + n, dtype=np.int64)
    kinds = np.array(["click", "view", "buy", "löschen", "返品", ""], dtype=object)
    amount = rng.random(n) * 1000.0
    kind = kinds[rng.integers(0, len(kinds), n)]
    ts = BASE_TS + ids * 2_000_000
    ts = np.where(ids % 1000 == 999, PRE_EPOCH_TS + ids, ts)
    return pa.table({
        "id": pa.array(ids),
        "amount": pa.array(amount, mask=(ids % 7 == 3)),
        "kind": pa.array(list(kind), type=pa.string(), mask=(ids % 5 == 1)),
        "ts": pa.array(ts, type=pa.timestamp("us", tz="UTC"), mask=(ids % 11 == 4)),
    })


def ingest_all(conn, table, parts):
    for p in parts:
        assert ingest(conn, table, p) == p.num_rows
    return pa.concat_tables(parts)


def totals(conn, frm):
    r = query(conn, f"SELECT count(*) AS n, sum(id) AS s, count(DISTINCT id) AS d FROM {frm}").to_pylist()[0]
    return r["n"], r["s"] or 0, r["d"]


def first_difference(got, want, col):
    g, w = got.column(col).to_pylist(), want.column(col).to_pylist()
    for i, (a, b) in enumerate(zip(g, w)):
        if a != b:
            return f"row {i} (id {want.column('id')[i]}): got {a!r}, want {b!r}"
    return f"lengths {len(g)} vs {len(w)}"


def assert_rows_equal(got, want, what, types=ARROW_TYPES):
    """got and want hold the same rows (compared sorted by id), all columns,
    with the given Arrow types."""
    assert got.num_rows == want.num_rows, f"{what}: {got.num_rows} rows, want {want.num_rows}"
    assert got.column_names == want.column_names, f"{what}: columns {got.column_names}, want {want.column_names}"
    for name, typ in (types or {}).items():
        if name in got.column_names:
            ok = got.schema.field(name).type in (typ if isinstance(typ, tuple) else (typ,))
            assert ok, f"{what}: column {name} is {got.schema.field(name).type}, want {typ}"
    got, want = got.sort_by("id"), want.sort_by("id")
    for col in want.column_names:
        g = got.column(col).combine_chunks()
        w = want.column(col).combine_chunks()
        if g.type != w.type:
            w = w.cast(g.type)
        assert g.equals(w), f"{what}: column {col} differs: {first_difference(got, want, col)}"


# ---------------------------------------------------------------- tiering state

def tiering(conn, table):
    """The lakestream.tiering rows of default.<table>, by bucket."""
    t = query(conn, "SELECT * FROM lakestream.tiering ORDER BY table_name, bucket")
    return [r for r in t.to_pylist() if r["table_name"] == f"default.{table}"]


def wait_tiered(conn, table, rows, server=None, timeout=60):
    """Waits until every bucket of table has lag 0 with `rows` rows tiered in
    all (tiered offsets are row offsets, dense from 0); returns the status."""
    deadline = time.monotonic() + timeout
    st = []
    while time.monotonic() < deadline:
        st = tiering(conn, table)
        if st and all(r["lag_rows"] == 0 for r in st) and sum(r["tiered_offset"] for r in st) == rows:
            return st
        time.sleep(0.2)  # polling the tiering state: there is no event to wait on
    log = server.tail(30) if server else ""
    pytest.fail(f"table {table}: lake did not catch up to {rows} rows in {timeout} s; lakestream.tiering: {st}\n"
                f"server log:\n{log}")


def wait_rounds(conn, table, n, timeout=30):
    deadline = time.monotonic() + timeout
    st = []
    while time.monotonic() < deadline:
        st = tiering(conn, table)
        if st and st[0]["rounds"] >= n:
            return st
        time.sleep(0.1)
    pytest.fail(f"table {table}: fewer than {n} tiering rounds in {timeout} s: {st}")


def parse_offsets(prop):
    out = {}
    for kv in prop.split(","):
        b, o = kv.split(":")
        out[int(b)] = int(o)
    return out


# ---------------------------------------------------------------- Iceberg side

def ice_catalog(data_dir, **props):
    """pyiceberg over the node's embedded SQL catalog."""
    return SqlCatalog("lakestream", uri=f"sqlite:///{os.path.join(data_dir, 'iceberg.db')}", **props)


def ice_tables(cat):
    try:
        return [".".join(t) for t in cat.list_tables("default")]
    except NoSuchNamespaceError:  # no table was ever tiered
        return []


def data_files(tbl):
    return [task.file.file_path for task in tbl.scan().plan_files()]


def local_path(uri):
    assert uri.startswith("file://"), f"data file {uri} is not in a file:// warehouse"
    return uri[len("file://"):]


def spec_fields(tbl):
    """The partition spec as (source column, transform) pairs."""
    sch = tbl.schema()
    return [(sch.find_column_name(f.source_id), f.transform) for f in tbl.spec().fields]


def connect(server):
    return flightsql.connect(server.uri, autocommit=True)


# ---------------------------------------------------------------- plain scans of a tiered table

def test_plain_scan_of_tiered_table_keeps_its_schema(server, conn):
    """SELECT * / SELECT cols FROM t with rows in the lake is served by the
    query engine: its stream must have the schema GetFlightInfo announced
    (the ADBC driver refuses any other), NOT NULL columns included."""
    query(conn, "CREATE TABLE pn (id BIGINT NOT NULL, v VARCHAR) WITH ('bucket.num'='3', 'bucket.key'='id', "
                "'datalake.freshness'='1s')")
    want = pa.table({"id": pa.array(range(1000), pa.int64()), "v": pa.array([f"v{i}" for i in range(1000)])})
    ingest(conn, "pn", want)
    assert query(conn, "SELECT * FROM pn").num_rows == 1000  # log only: the stored batches
    wait_tiered(conn, "pn", 1000, server)
    for sql in ["SELECT * FROM pn", "SELECT id FROM pn", "SELECT v, id FROM pn"]:
        got = query(conn, sql)
        assert got.num_rows == 1000, sql
        assert not got.schema.field("id").nullable, f"{sql}: id is NOT NULL in the table, nullable in the result"
    assert_rows_equal(query(conn, "SELECT * FROM pn"), want, "SELECT * FROM pn", None)


# ---------------------------------------------------------------- 1, 2: pyiceberg and DuckDB read the lake

PARTS = [lake_rows(s, n) for s, n in [(0, 50_000), (50_000, 70_000), (120_000, 30_000), (150_000, 50_000)]]
N = sum(p.num_rows for p in PARTS)


def tiered_table(server, conn, name, partitioned):
    part = "PARTITIONED BY (day(ts)) " if partitioned else ""
    query(conn, f"CREATE TABLE {name} ({COLUMNS}) {part}"
                f"WITH ('bucket.num'='3', 'bucket.key'='id', 'datalake.freshness'='1s')")
    want = ingest_all(conn, name, PARTS)
    st = wait_tiered(conn, name, N, server)
    return want, st


@pytest.mark.parametrize("partitioned", [False, True], ids=["bucket", "day_ts+bucket"])
def test_pyiceberg_reads_exactly_the_ingested_rows(server, conn, partitioned):
    want, st = tiered_table(server, conn, "ev", partitioned)
    assert all(r["last_error"] is None for r in st), st
    assert st[0]["rows_tiered"] == N, st  # rows_tiered counts the table's rows since start

    cat = ice_catalog(server.data_dir)
    assert "default.ev" in ice_tables(cat)
    tbl = cat.load_table("default.ev")
    assert [f.name for f in tbl.schema().fields] == ["id", "amount", "kind", "ts"], tbl.schema()
    assert tbl.schema().find_field("id").required

    fields = spec_fields(tbl)
    want_spec = ([("ts", DayTransform())] if partitioned else []) + [("id", BucketTransform(3))]
    assert fields == want_spec, f"partition spec {tbl.spec()}"

    offsets = parse_offsets(tbl.properties["lakestream.tiered-offsets"])
    assert sum(offsets.values()) == N, tbl.properties
    assert offsets == {r["bucket"]: r["tiered_offset"] for r in st}, (tbl.properties, st)

    got = tbl.scan().to_arrow()
    assert_rows_equal(got, want, "pyiceberg scan")

    # The union and the lake layer serve the same rows with the table's types.
    assert_rows_equal(query(conn, "SELECT * FROM ev"), want, "SELECT * FROM ev")
    assert_rows_equal(query(conn, 'SELECT * FROM "ev$lake"'), want, 'SELECT * FROM "ev$lake"')

    if partitioned:
        # Every data file holds one day and one bucket: the spec is applied, not just declared.
        files = tbl.inspect.files().to_pylist()
        days = {f["partition"]["ts_day"] for f in files}
        assert None in days, "rows with a null ts are in no null-day partition"
        assert len(days) >= 4, f"only {len(days)} day partitions: {days}"


def test_duckdb_reads_the_lake_parquet_files(server, conn):
    want, _ = tiered_table(server, conn, "ev", partitioned=True)
    tbl = ice_catalog(server.data_dir).load_table("default.ev")
    paths = [local_path(p) for p in data_files(tbl)]
    assert paths, "the Iceberg table has no data files"
    missing = [p for p in paths if not os.path.exists(p)]
    assert not missing, f"{len(missing)} data files pyiceberg lists do not exist: {missing[:3]}"
    warehouse = os.path.realpath(os.path.join(server.data_dir, "warehouse"))
    assert all(os.path.realpath(p).startswith(warehouse + os.sep) for p in paths), paths[:3]

    db = duckdb.connect()
    n, s, d, amount, kinds, nulls = db.execute(
        "SELECT count(*), sum(id), count(DISTINCT id), sum(amount), count(kind), count(*) - count(ts) "
        "FROM read_parquet(?, hive_partitioning = false)", [paths]).fetchone()
    ids = want.column("id")
    assert (n, s, d) == (N, pc.sum(ids).as_py(), N)
    assert amount == pytest.approx(pc.sum(want.column("amount")).as_py(), rel=1e-12)
    assert kinds == N - want.column("kind").null_count
    assert nulls == want.column("ts").null_count
    # The files carry only the user's columns (the partition values are in the
    # paths, id_bucket=0/..., which DuckDB would add as columns with hive_partitioning).
    cols = [r[0] for r in db.execute("DESCRIBE SELECT * FROM read_parquet(?, hive_partitioning = false)", [paths]).fetchall()]
    assert cols == ["id", "amount", "kind", "ts"], cols
    counted = sum(t.file.record_count for t in tbl.scan().plan_files())
    assert counted == N, f"data files' record counts add up to {counted}, want {N}"


# ---------------------------------------------------------------- filters pushed into the lake scan

PREDICATES = [
    "id < 1000", "id <= 0", "id > 99990", "id = 4242", "id = 77777", "id BETWEEN 30000 AND 30999",
    "id >= 79990 AND id < 80010",
    "ts < TIMESTAMPTZ '1970-01-01 00:00:00+00'",
    "ts >= TIMESTAMPTZ '1969-12-29 00:00:00+00' AND ts < TIMESTAMPTZ '1969-12-30 00:00:00+00'",
    "ts > TIMESTAMPTZ '1969-12-29 00:00:00.5+00'",
    "ts IS NULL", "ts IS NOT NULL", "ts >= TIMESTAMPTZ '2024-03-02 00:00:00+00'",
    "ts < TIMESTAMPTZ '2024-03-01 12:00:00+00'", "ts = TIMESTAMPTZ '2024-03-01 00:00:02+00'",
    "amount > 999", "amount < 1", "amount >= 500", "amount IS NULL", "amount > 1e9", "amount < -1e9",
    "kind = 'buy'", "kind = '返品'", "kind > 'v'", "kind = ''", "kind IS NULL", "kind < 'c'",
    "id < 50000 AND kind = 'view' AND amount > 100",
]


def filter_rows(start, n):
    """lake_rows with NaN and infinities among the amounts: DuckDB orders NaN
    above every number, so a pruning rule that skips NaN loses rows."""
    t = lake_rows(start, n)
    ids = t.column("id").to_numpy()
    amount = t.column("amount").to_numpy(zero_copy_only=False)
    amount = np.where(ids % 997 == 0, np.nan, amount)
    amount = np.where(ids % 4999 == 1, np.inf, amount)
    amount = np.where(ids % 5003 == 2, -np.inf, amount)
    return t.set_column(1, "amount", pa.array(amount, mask=t.column("amount").is_null().to_numpy(zero_copy_only=False)))


def filter_mismatches(conn, table, want):
    ref = duckdb.connect()
    ref.execute("SET TimeZone = 'UTC'")
    ref.register("want", want)
    bad = []
    for pred in PREDICATES:
        sql = "SELECT count(*) AS n, sum(id) AS s, count(DISTINCT id) AS d FROM {} WHERE " + pred
        r = query(conn, sql.format(table)).to_pylist()[0]
        got = (r["n"], r["s"], r["d"])
        exp = tuple(ref.execute(sql.format("want")).fetchone())
        if got != exp:
            bad.append(f"WHERE {pred}: got {got}, want {exp}")
    return bad


def test_filtered_union_matches_reference(server, conn):
    """WHERE conjuncts are pushed into the lake scan (partition and file
    pruning, row filters): every predicate must give what DuckDB gives over
    the same rows, on lake + tail and on the lake alone."""
    query(conn, f"CREATE TABLE f ({COLUMNS}) PARTITIONED BY (day(ts)) "
                f"WITH ('bucket.num'='3', 'bucket.key'='id', 'datalake.freshness'='1s')")
    first = ingest_all(conn, "f", [filter_rows(0, 40_000), filter_rows(40_000, 40_000)])
    wait_tiered(conn, "f", first.num_rows, server)
    want = pa.concat_tables([first, ingest_all(conn, "f", [filter_rows(80_000, 20_000)])])
    bad = filter_mismatches(conn, "f", want)  # lake + whatever of the tail is not tiered yet
    wait_tiered(conn, "f", want.num_rows, server)
    bad += [f"(lake only) {b}" for b in filter_mismatches(conn, '"f$lake"', want)]
    assert not bad, "filtered reads differ from DuckDB over the same rows:\n" + "\n".join(bad)


# ---------------------------------------------------------------- 3: union exact while rounds run

def test_union_exact_during_tiering(server, conn):
    query(conn, f"CREATE TABLE u ({COLUMNS}) WITH ('bucket.num'='3', 'bucket.key'='id', 'datalake.freshness'='1s')")
    step, acked, sent, mixed = 20_000, [0, 0], [], 0
    deadline = time.monotonic() + 60
    i = 0
    # At least 30 ingests, and on until the tierer has committed a few rounds
    # in between, so that the checks below really read lake + log tail.
    while i < 30 or (mixed < 3 and time.monotonic() < deadline):
        part = lake_rows(i * step, step)
        ingest(conn, "u", part)
        sent.append(part)
        acked[0] += step
        acked[1] += pc.sum(part.column("id")).as_py()
        got = totals(conn, "u")
        assert got == (acked[0], acked[1], acked[0]), \
            f"after ingest {i + 1}: union count/sum/distinct {got}, acknowledged {acked[0]}/{acked[1]}; " \
            f"tiering {tiering(conn, 'u')}"
        tiered = sum(r["tiered_offset"] for r in tiering(conn, "u"))
        mixed += 0 < tiered < acked[0]
        i += 1
    assert mixed >= 3, f"only {mixed} checks read rows from both lake and log: tiering never overlapped the loop"

    wait_tiered(conn, "u", acked[0], server)
    assert totals(conn, '"u$lake"') == (acked[0], acked[1], acked[0])
    want = pa.concat_tables(sent)
    assert_rows_equal(query(conn, 'SELECT * FROM "u$lake"'), want, "lake after catching up")
    assert_rows_equal(query(conn, "SELECT * FROM u"), want, "union after catching up")


# ---------------------------------------------------------------- 4: kill -9 during tiering

class Ingester(threading.Thread):
    """Ingests batches of distinct ids (from first_id on) on its own
    connection until stopped or the server goes away; acked holds the
    (start, n) of the batches that returned, inflight the one that did not."""

    def __init__(self, uri, table, first_id, step=5_000, pace=0.1):
        super().__init__(daemon=True)
        self.uri, self.table, self.first_id, self.step, self.pace = uri, table, first_id, step, pace
        self.acked, self.inflight, self.error = [], None, None
        self.stop = threading.Event()

    def run(self):
        try:
            conn = flightsql.connect(self.uri, autocommit=True)
        except Exception as e:
            self.error = e
            return
        try:
            start = self.first_id
            while not self.stop.is_set():
                self.inflight = (start, self.step)
                ingest(conn, self.table, lake_rows(start, self.step))
                self.acked.append(self.inflight)
                self.inflight = None
                start += self.step
                self.stop.wait(self.pace)  # a steady producer (<= 50k rows/s), not a wait for a condition
        except Exception as e:  # the kill
            self.error = e
        finally:
            try:
                conn.close()
            except Exception:
                pass


def range_totals(start, n):
    """(count, sum) of the ids start .. start+n-1."""
    return n, n * start + n * (n - 1) // 2


def test_kill9_during_tiering_keeps_every_acknowledged_row_once(server, conn):
    query(conn, f"CREATE TABLE k ({COLUMNS}) WITH ('bucket.num'='3', 'bucket.key'='id', 'datalake.freshness'='1s')")
    want_n, want_s = 0, 0
    c = conn
    for cycle in range(3):
        ing = Ingester(server.uri, "k", first_id=cycle * 10_000_000)
        ing.start()
        try:
            wait_rounds(c, "k", 2)  # rounds count since this start
            # Kill while rows wait for the next round (a round follows each
            # commit after 1 s, and rows keep arriving), so the kill lands
            # in or near a round.
            deadline = time.monotonic() + 10
            while not any(r["lag_rows"] > 0 for r in tiering(c, "k")) and time.monotonic() < deadline:
                time.sleep(0.02)
            server.kill9()
        finally:
            ing.stop.set()
            ing.join(30)
        assert not ing.is_alive()
        assert ing.acked, f"cycle {cycle}: no ingest acknowledged before the kill ({ing.error})"
        for start, n in ing.acked:
            bn, bs = range_totals(start, n)
            want_n, want_s = want_n + bn, want_s + bs

        server.start()
        if c is not conn:
            c.close()
        c = connect(server)
        if ing.inflight:  # the write in flight at the kill: all of it or none
            start, n = ing.inflight
            (seen,) = query(c, f"SELECT count(*) AS n FROM k WHERE id >= {start} AND id < {start + n}").to_pylist()[0].values()
            assert seen in (0, n), f"cycle {cycle}: {seen} of the {n} rows of the write in flight at the kill survived"
            if seen:
                bn, bs = range_totals(start, n)
                want_n, want_s = want_n + bn, want_s + bs
        got = totals(c, "k")
        assert got == (want_n, want_s, want_n), \
            f"cycle {cycle}: after restart union count/sum/distinct {got}, want {(want_n, want_s, want_n)}; " \
            f"tiering {tiering(c, 'k')}"

    try:
        st = wait_tiered(c, "k", want_n, server)
        assert all(r["last_error"] is None for r in st), st
        assert totals(c, "k") == (want_n, want_s, want_n)
        assert totals(c, '"k$lake"') == (want_n, want_s, want_n)
        got = ice_catalog(server.data_dir).load_table("default.k").scan(selected_fields=("id",)).to_arrow()
        ids = got.column("id")
        assert (got.num_rows, pc.count_distinct(ids).as_py()) == (want_n, want_n), \
            f"pyiceberg reads {got.num_rows} rows, {pc.count_distinct(ids).as_py()} distinct ids; want {want_n} once each"
        assert pc.sum(ids).as_py() == want_s
        print(f"\nkill -9 x3 during tiering: {want_n} rows acknowledged, all read back once")
    finally:
        if c is not conn:
            c.close()


# ---------------------------------------------------------------- 5: an s3:// warehouse on moto

def wait_port(port, proc, what, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)  # polling a port: there is no event to wait on
    raise RuntimeError(f"{what} did not listen on {port} in {timeout} s")


@pytest.fixture
def moto(tmp_path):
    exe = os.path.join(os.path.dirname(sys.executable), "moto_server")
    if not os.path.exists(exe):
        exe = shutil.which("moto_server")
    if not exe:
        need("moto_server (moto[server])")
    port = free_port()
    log = open(tmp_path / "moto.log", "w")
    proc = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_port(port, proc, "moto_server")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait(30)
        log.close()


def s3_put_bucket(endpoint, bucket):
    req = urllib.request.Request(f"{endpoint}/{bucket}", method="PUT")
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200


def s3_keys(endpoint, bucket, prefix):
    with urllib.request.urlopen(f"{endpoint}/{bucket}?list-type=2&prefix={prefix}&max-keys=1000", timeout=10) as r:
        return re.findall(r"<Key>([^<]+)</Key>", r.read().decode())


def test_s3_warehouse_on_moto(tmp_path, moto):
    s3_put_bucket(moto, "lake")
    server = Server(tmp_path / "data", tmp_path / "server.log").start(
        "--warehouse", "s3://lake/wh", "--s3-endpoint", moto, "--s3-region", "us-east-1",
        "--s3-access-key-id", "testing", "--s3-secret-access-key", "testing", "--s3-path-style")
    conn = connect(server)
    try:
        query(conn, f"CREATE TABLE s3t ({COLUMNS}) PARTITIONED BY (day(ts)) "
                    f"WITH ('bucket.num'='3', 'bucket.key'='id', 'datalake.freshness'='1s')")
        parts = [lake_rows(0, 40_000), lake_rows(40_000, 60_000)]
        want = ingest_all(conn, "s3t", parts)
        st = wait_tiered(conn, "s3t", want.num_rows, server)
        assert all(r["last_error"] is None for r in st), st
        assert_rows_equal(query(conn, "SELECT * FROM s3t"), want, "union over an s3 warehouse")
        assert_rows_equal(query(conn, 'SELECT * FROM "s3t$lake"'), want, "lake layer over an s3 warehouse")

        keys = s3_keys(moto, "lake", "wh/")
        assert any(k.endswith(".parquet") for k in keys), f"no Parquet object under s3://lake/wh/: {keys[:10]}"
        assert any(k.endswith(".metadata.json") for k in keys), f"no table metadata under s3://lake/wh/: {keys[:10]}"
        local = [f for _, _, fs in os.walk(server.data_dir) for f in fs if f.endswith(".parquet")]
        assert not local, f"Parquet files written to the data dir with an s3 warehouse: {local[:3]}"

        cat = ice_catalog(server.data_dir, **{
            "s3.endpoint": moto, "s3.access-key-id": "testing", "s3.secret-access-key": "testing",
            "s3.region": "us-east-1"})
        tbl = cat.load_table("default.s3t")
        paths = data_files(tbl)
        assert paths and all(p.startswith("s3://lake/wh/") for p in paths), paths[:3]
        assert_rows_equal(tbl.scan().to_arrow(), want, "pyiceberg over s3")
    finally:
        conn.close()
        server.stop()


# ---------------------------------------------------------------- 6: DDL reaches the lake

SMALL = [lake_rows(0, 5_000), lake_rows(5_000, 5_000)]


def test_drop_table_drops_the_iceberg_table(server, conn):
    query(conn, f"CREATE TABLE d ({COLUMNS}) WITH ('bucket.num'='3', 'bucket.key'='id', 'datalake.freshness'='1s')")
    ingest_all(conn, "d", SMALL)
    wait_tiered(conn, "d", 10_000, server)
    tbl = ice_catalog(server.data_dir).load_table("default.d")
    files = [local_path(p) for p in data_files(tbl)]
    assert files and all(os.path.exists(f) for f in files)

    query(conn, "DROP TABLE d")
    cat = ice_catalog(server.data_dir)
    assert "default.d" not in ice_tables(cat)
    with pytest.raises(NoSuchTableError):
        cat.load_table("default.d")
    left = [f for f in files if os.path.exists(f)]
    assert not left, f"{len(left)} of {len(files)} data files of the dropped table are still there: {left[:3]}"
    assert tiering(conn, "d") == []


def test_drop_database_cascade_drops_its_iceberg_tables(server, conn):
    query(conn, "CREATE DATABASE sales")
    query(conn, f"CREATE TABLE sales.o ({COLUMNS}) WITH ('bucket.num'='3', 'bucket.key'='id', 'datalake.freshness'='1s')")
    cur = conn.cursor()
    cur.adbc_ingest("o", SMALL[0], mode="append", db_schema_name="sales")
    cur.close()
    deadline = time.monotonic() + 30
    while sum(r["tiered_offset"] for r in query(conn, "SELECT * FROM lakestream.tiering WHERE table_name = 'sales.o'")
              .to_pylist()) < SMALL[0].num_rows:
        assert time.monotonic() < deadline, "sales.o did not tier in 30 s"
        time.sleep(0.2)
    cat = ice_catalog(server.data_dir)
    assert ("sales", "o") in cat.list_tables("sales")
    query(conn, "DROP DATABASE sales CASCADE")
    cat = ice_catalog(server.data_dir)
    with pytest.raises(NoSuchTableError):
        cat.load_table("sales.o")


def test_keep_on_drop_keeps_the_iceberg_table(server, conn):
    query(conn, f"CREATE TABLE kd ({COLUMNS}) WITH ('bucket.num'='3', 'bucket.key'='id', "
                f"'datalake.freshness'='1s', 'datalake.keep-on-drop'='true')")
    want = ingest_all(conn, "kd", SMALL)
    wait_tiered(conn, "kd", 10_000, server)
    query(conn, "DROP TABLE kd")
    with pytest.raises(Exception, match="(?i)not found|does not exist"):
        query(conn, "SELECT count(*) FROM kd")
    cat = ice_catalog(server.data_dir)
    assert "default.kd" in ice_tables(cat)
    assert_rows_equal(cat.load_table("default.kd").scan().to_arrow(), want, "kept lake table")
    # A new table of that name must not continue the kept one's offsets: it is
    # refused, naming the reason, and creates nothing.
    with pytest.raises(Exception, match="keep-on-drop"):
        query(conn, f"CREATE TABLE kd ({COLUMNS}) WITH ('bucket.num'='3', 'bucket.key'='id')")
    with pytest.raises(Exception, match="(?i)not found|does not exist"):
        query(conn, "SELECT count(*) FROM kd")
    assert_rows_equal(ice_catalog(server.data_dir).load_table("default.kd").scan().to_arrow(), want,
                      "kept lake table after the refused CREATE")


def test_datalake_disabled_has_no_lake(server, conn):
    query(conn, f"CREATE TABLE nl ({COLUMNS}) WITH ('bucket.num'='3', 'bucket.key'='id', "
                f"'datalake.enabled'='false', 'datalake.freshness'='1s')")
    # A tiered table next to it: once it has tiered, a round has had its chance at nl too.
    query(conn, f"CREATE TABLE yl ({COLUMNS}) WITH ('bucket.num'='3', 'bucket.key'='id', 'datalake.freshness'='1s')")
    want = ingest_all(conn, "nl", SMALL)
    ingest_all(conn, "yl", SMALL)
    wait_tiered(conn, "yl", 10_000, server)

    assert tiering(conn, "nl") == []
    cat = ice_catalog(server.data_dir)
    assert "default.nl" not in ice_tables(cat)
    with pytest.raises(NoSuchTableError):
        cat.load_table("default.nl")
    with pytest.raises(Exception) as e:
        query(conn, 'SELECT count(*) FROM "nl$lake"')
    msg = str(e.value)
    assert "NOT_FOUND" in msg or "NotFound" in msg, msg
    assert "datalake.enabled" in msg, msg
    assert_rows_equal(query(conn, "SELECT * FROM nl"), want, "log-only table")


def test_add_column_reaches_the_lake(server, conn):
    query(conn, f"CREATE TABLE ac ({COLUMNS}) WITH ('bucket.num'='3', 'bucket.key'='id', 'datalake.freshness'='1s')")
    old = ingest_all(conn, "ac", SMALL)
    wait_tiered(conn, "ac", 10_000, server)

    query(conn, "ALTER TABLE ac ADD COLUMN c VARCHAR")
    new = lake_rows(10_000, 5_000)
    new = new.append_column("c", pa.array([f"c{i}" for i in new.column("id").to_pylist()], pa.string()))
    ingest(conn, "ac", new)
    # Before and after the new rows tier, the union returns c for both.
    want = pa.concat_tables([old.append_column("c", pa.nulls(old.num_rows, pa.string())), new])
    types = dict(ARROW_TYPES, c=pa.string())
    assert_rows_equal(query(conn, "SELECT * FROM ac"), want, "union right after ADD COLUMN", types)

    st = wait_tiered(conn, "ac", 15_000, server)
    assert all(r["last_error"] is None for r in st), st
    tbl = ice_catalog(server.data_dir).load_table("default.ac")
    assert [f.name for f in tbl.schema().fields] == ["id", "amount", "kind", "ts", "c"], tbl.schema()
    # pyiceberg fills a column missing from the older files as large_string.
    assert_rows_equal(tbl.scan().to_arrow(), want, "pyiceberg after ADD COLUMN",
                      dict(types, c=(pa.string(), pa.large_string())))
    got = query(conn, "SELECT id, c FROM ac")
    assert_rows_equal(got, want.select(["id", "c"]), "union SELECT id, c", types)
    assert_rows_equal(query(conn, 'SELECT id, c FROM "ac$lake"'), want.select(["id", "c"]), "lake SELECT id, c", types)


# ---------------------------------------------------------------- 7: lakestream.tiering and /metrics

def test_tiering_system_table_plain_select(server, conn):
    """SELECT * FROM lakestream.tiering, the plain form the docs show."""
    query(conn, f"CREATE TABLE ps ({COLUMNS}) WITH ('bucket.num'='3', 'bucket.key'='id', 'datalake.freshness'='1s')")
    ingest_all(conn, "ps", SMALL)
    wait_tiered(conn, "ps", 10_000, server)
    t = query(conn, "SELECT * FROM lakestream.tiering")
    assert t.column_names == TIERING_COLUMNS
    rows = [r for r in t.to_pylist() if r["table_name"] == "default.ps"]
    assert [r["bucket"] for r in rows] == [0, 1, 2]
    assert sum(r["tiered_offset"] for r in rows) == 10_000
    assert all(r["committer"] for r in rows), rows  # a single node commits its own tables


METRIC = re.compile(r'^(\w+)\{([^}]*)\} (\S+)$')


def scrape(server):
    with urllib.request.urlopen(f"http://127.0.0.1:{server.http_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        m = METRIC.match(line)
        if m:
            labels = tuple(sorted(re.findall(r'(\w+)="([^"]*)"', m.group(2))))
            out[(m.group(1), labels)] = float(m.group(3))
    return out


def bucket_metric(metrics, name, table, bucket):
    key = (name, (("bucket", str(bucket)), ("table", f"default.{table}")))
    assert key in metrics, f"metric {name}{{table=default.{table},bucket={bucket}}} missing; lake metrics: " \
                           f"{sorted({k[0] for k in metrics if 'lake' in k[0]})}"
    return metrics[key]


def test_metrics_report_tiered_offsets_and_lag(server, conn):
    query(conn, f"CREATE TABLE mt ({COLUMNS}) WITH ('bucket.num'='3', 'bucket.key'='id', 'datalake.freshness'='1s')")
    # A table whose first round is an hour away (a new table's first round
    # comes after its freshness interval): its lag stays until then.
    query(conn, f"CREATE TABLE mh ({COLUMNS}) WITH ('bucket.num'='3', 'bucket.key'='id', 'datalake.freshness'='1h')")
    ingest_all(conn, "mt", SMALL)
    ingest_all(conn, "mh", SMALL)
    st = wait_tiered(conn, "mt", 10_000, server)

    m = scrape(server)
    for r in st:
        b = r["bucket"]
        assert bucket_metric(m, "lakestream_lake_tiered_offset", "mt", b) == r["tiered_offset"]
        assert bucket_metric(m, "lakestream_lake_lag_rows", "mt", b) == 0
        assert bucket_metric(m, "lakestream_lake_lag_seconds", "mt", b) == 0
    assert sum(bucket_metric(m, "lakestream_lake_tiered_offset", "mt", b) for b in range(3)) == 10_000

    # The untiered rows of mh age: wait until the lag metric says so.
    deadline = time.monotonic() + 10
    while True:
        m = scrape(server)
        secs = [bucket_metric(m, "lakestream_lake_lag_seconds", "mh", b) for b in range(3)]
        if min(secs) >= 0.5 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    hs = tiering(conn, "mh")
    assert sum(r["lag_rows"] for r in hs) == 10_000, hs
    lag_rows = [bucket_metric(m, "lakestream_lake_lag_rows", "mh", b) for b in range(3)]
    assert sum(lag_rows) == 10_000 and all(x > 0 for x in lag_rows), lag_rows
    for b in range(3):
        assert bucket_metric(m, "lakestream_lake_tiered_offset", "mh", b) == 0
        assert bucket_metric(m, "lakestream_lake_lag_seconds", "mh", b) >= 0.5


# ---------------------------------------------------------------- moving the data directory

def test_moved_data_dir_reads_through_pyiceberg(tmp_path):
    """A stopped node's data directory moved elsewhere: the node starts there
    with the lake relocated (logged), serves the same rows, and pyiceberg
    reads the moved iceberg.db — every path at the new place — before and
    after a new round commits there."""
    a, b, log = tmp_path / "a", tmp_path / "b", tmp_path / "server.log"
    s = Server(a, log).start()
    try:
        with connect(s) as conn:
            query(conn, f"CREATE TABLE mv ({COLUMNS}) PARTITIONED BY (day(ts)) "
                        f"WITH ('bucket.num'='3', 'bucket.key'='id', 'datalake.freshness'='1s')")
            parts = []
            for p in PARTS[:2]:  # two rounds at least
                parts.append(p)
                ingest_all(conn, "mv", [p])
                wait_tiered(conn, "mv", sum(x.num_rows for x in parts), s)
            want = pa.concat_tables(parts)
    finally:
        assert s.stop() == 0, s.tail()
    os.rename(a, b)

    s = Server(b, log).start()
    try:
        with connect(s) as conn:
            assert_rows_equal(query(conn, "SELECT * FROM mv"), want, "SELECT * FROM mv after the move")
            assert_rows_equal(query(conn, 'SELECT * FROM "mv$lake"'), want, '"mv$lake" after the move')
            with open(log) as f:
                assert "lake table relocated into the data directory" in f.read(), s.tail()

            tbl = ice_catalog(b).load_table("default.mv")
            assert tbl.metadata_location.startswith(f"file://{b}/"), tbl.metadata_location
            assert tbl.location().startswith(f"file://{b}/"), tbl.location()
            files = data_files(tbl)
            assert files and all(local_path(f).startswith(f"{b}/") and os.path.exists(local_path(f)) for f in files), files
            assert_rows_equal(tbl.scan().to_arrow(), want, "pyiceberg after the move")

            ingest_all(conn, "mv", [PARTS[2]])
            want = pa.concat_tables([want, PARTS[2]])
            wait_tiered(conn, "mv", want.num_rows, s)
            tbl = ice_catalog(b).load_table("default.mv")
            assert_rows_equal(tbl.scan().to_arrow(), want, "pyiceberg after a round at the new place")
    finally:
        assert s.stop() == 0, s.tail()
    assert not a.exists()
