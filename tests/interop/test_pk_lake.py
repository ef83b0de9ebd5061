"""Primary-key tables in the lake, seen from outside (issue 16, "Must show").

A model-based test drives random upserts, partial updates, DELETE ... WHERE
and UPDATE ... WHERE into primary-key tables through ADBC while tiering
rounds run (a short datalake.freshness) and kill -9 restarts the node in
between. An in-memory model applies the same writes and keeps its state as
of every write, so that each reader can be compared with the state as of
what it has committed:

- Lakestream's SELECT (the union of lake and log) with the model's current
  state;
- `"t$lake"`, pyiceberg's `scan().to_arrow()`, DuckDB over the files
  pyiceberg plans (the data files read with their row numbers, minus the
  (file_path, pos) rows of the task's position delete files, applied here)
  and Spark (`spark.table`, through Java Iceberg's JdbcCatalog over the
  node's iceberg.db) with the model's state as of the write whose end
  offsets are the lake snapshot's `lakestream.tiered-offsets` (a PK round
  tiers one published state: a write boundary in every bucket).

Then `changes('t', 'earliest')` after retention removed the head of the log
must give the change records the log had (a `"t$changelog"` capture taken
before retention ran).

Spark starts once per module (local[1], small memory); its jars are those
`make spark-jars` fetched into .cache/spark."""
import os
import queue
import random
import threading
import time

import adbc_driver_flightsql.dbapi as flightsql
import pyarrow as pa
import pytest

from conftest import Server
from util import ingest, query
import sparkutil
from sparkutil import need

try:  # pinned in tests/requirements.txt; checked in a fixture so a missing one is reported, not a collection error
    import duckdb
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError
    from pyiceberg.manifest import DataFileContent
    _IMPORT_ERROR = None
except ImportError as e:  # pragma: no cover - depends on the venv
    _IMPORT_ERROR = e


@pytest.fixture(scope="module", autouse=True)
def _lake_clients():
    if _IMPORT_ERROR is not None:
        need(f"pyiceberg[sql-sqlite] / duckdb ({_IMPORT_ERROR})")


# ---------------------------------------------------------------- the node and Spark, once per module

@pytest.fixture(scope="module")
def node(tmp_path_factory):
    """One node for the module; its tables are the tests' own. Retention runs
    every 200 ms (only tables with a short log.retention lose anything)."""
    d = tmp_path_factory.mktemp("pklake")
    s = Server(d / "data", d / "server.log").start("--retention-check", "200ms")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def spark(node):
    """A SparkSession whose catalog `lakestream` is Java Iceberg's JdbcCatalog
    over the node's iceberg.db (iceberg-go's SQL catalog schema is the JDBC
    catalog's V1 schema) and its file:// warehouse; metadata not cached, so
    each read loads the current snapshot."""
    data = os.path.realpath(node.data_dir)
    cat = "spark.sql.catalog.lakestream"
    spark = sparkutil.session("pk-lake", jars=sparkutil.iceberg_jars(), conf={
        cat: "org.apache.iceberg.spark.SparkCatalog",
        f"{cat}.catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
        f"{cat}.uri": f"jdbc:sqlite:{data}/iceberg.db",
        f"{cat}.jdbc.schema-version": "V1",
        f"{cat}.warehouse": f"file://{data}/warehouse",
        f"{cat}.cache-enabled": "false",
    })
    yield spark
    spark.stop()


def connect(server):
    return flightsql.connect(server.uri, autocommit=True)


# ---------------------------------------------------------------- the model

class Model:
    """A primary-key table's state under a merge engine, as sql.md defines it:
    rows are dicts; the key is a tuple of the key columns' values."""

    def __init__(self, columns, key, engine="last_row", aggs=None):
        self.columns, self.key, self.engine, self.aggs = columns, key, engine, aggs or {}
        self.rows = {}

    def k(self, row):
        return tuple(row[c] for c in self.key)

    def upsert(self, rows):
        """One write of rows (dicts with the carried columns, key included),
        merged in order."""
        for r in rows:
            key, cur = self.k(r), self.rows.get(self.k(r))
            if cur is None:
                self.rows[key] = {c: r.get(c) for c in self.columns}
            elif self.engine == "last_row":
                self.rows[key] = dict(cur, **r)
            elif self.engine == "first_row":
                pass
            elif self.engine == "aggregation":
                new = dict(cur)
                for c, v in r.items():
                    if c in self.key or v is None:
                        continue
                    if self.aggs.get(c) == "sum":
                        new[c] = v if cur[c] is None else cur[c] + v
                    else:  # last_non_null_value, the default
                        new[c] = v
                self.rows[key] = new
            else:
                raise ValueError(self.engine)

    def delete(self, pred):
        gone = [k for k, r in self.rows.items() if pred(r)]
        for k in gone:
            del self.rows[k]
        return len(gone)

    def update(self, assign, pred):
        hit = [k for k, r in self.rows.items() if pred(r)]
        for k in hit:
            self.rows[k] = dict(self.rows[k], **assign(self.rows[k]))
        return len(hit)

    def snapshot(self):
        return {k: dict(r) for k, r in self.rows.items()}


def as_state(rows, key):
    """Rows (dicts) as {key tuple: row}, failing on a key seen twice."""
    out, dup = {}, []
    for r in rows:
        k = tuple(r[c] for c in key)
        if k in out:
            dup.append(k)
        out[k] = r
    return out, dup


def state_diff(got_rows, want, key, what):
    """None if got_rows is exactly want (one row per key, every column), else
    a message naming the first differences."""
    got, dup = as_state(got_rows, key)
    msgs = []
    if dup:
        msgs.append(f"{len(dup)} keys more than once, e.g. {dup[:3]}")
    missing = [k for k in want if k not in got]
    extra = [k for k in got if k not in want]
    wrong = [k for k in want if k in got and got[k] != want[k]]
    if missing:
        msgs.append(f"{len(missing)} keys missing, e.g. {[want[k] for k in sorted(missing)[:3]]}")
    if extra:
        msgs.append(f"{len(extra)} keys that should not be there, e.g. {[got[k] for k in sorted(extra)[:3]]}")
    if wrong:
        msgs.append(f"{len(wrong)} rows differ, e.g. " +
                    "; ".join(f"got {got[k]} want {want[k]}" for k in sorted(wrong)[:3]))
    if not msgs:
        return None
    return f"{what}: {len(got_rows)} rows, want {len(want)}: " + "; ".join(msgs)


# ---------------------------------------------------------------- random writes

REGIONS = ["eu", "us", "ap", "mars", "ünï", "ü", "a b/c", "%"]


def rnd_val(rng, col, null_rate=0.1):
    if rng.random() < null_rate:
        return None
    if col == "region":
        return rng.choice(REGIONS)
    if col in ("amount", "total"):
        return float(rng.randrange(0, 1000))
    if col == "n":
        return rng.randrange(-50, 50)
    if col == "s":
        return rng.choice(["a", "bb", "ccc", "", "é", "long " * 5])
    raise ValueError(col)


def sql_lit(v):
    if v is None:
        return "NULL"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return repr(v)


ARROW = {"id": pa.int64(), "region": pa.string(), "amount": pa.float64(), "total": pa.float64(),
         "n": pa.int64(), "s": pa.string()}


def arrow_rows(rows, cols):
    return pa.table({c: pa.array([r[c] for r in rows], ARROW[c]) for c in cols})


class Case:
    """A table under test: its DDL, model, and the writes it allows."""

    def __init__(self, name, ddl, columns, key, engine="last_row", aggs=None, keys=300, partial=True,
                 key_regions=None):
        self.name, self.ddl, self.partial = name, ddl, partial
        self.model = Model(columns, key, engine, aggs)
        self.keys, self.key_regions = keys, key_regions
        self.values = [c for c in columns if c not in key]

    def new_key(self, rng):
        k = {"id": rng.randrange(self.keys)}
        if self.key_regions:
            k["region"] = rng.choice(self.key_regions)
        return k

    def write(self, rng, conn):
        """One random write, applied to the node and the model; returns what it did."""
        m, t = self.model, self.name
        op = rng.choices(["ingest", "partial", "delete", "update"], [5, 2 if self.partial else 0, 1, 1])[0]
        if op == "ingest":
            rows = []
            for _ in range(rng.randrange(1, 60)):
                r = self.new_key(rng)
                r.update({c: rnd_val(rng, c) for c in self.values})
                rows.append(r)
            if rng.random() < 0.3 and rows:  # a key twice in one write: merged in order
                rows.append(dict(rows[0], **{c: rnd_val(rng, c) for c in self.values}))
            assert ingest(conn, t, arrow_rows(rows, m.columns)) == len(rows)
            m.upsert(rows)
            return f"ingest {len(rows)}"
        if op == "partial":
            cols = rng.sample(self.values, rng.randrange(1, len(self.values)))
            carried = m.key + [c for c in self.values if c in cols]
            rows = []
            for _ in range(rng.randrange(1, 30)):
                r = self.new_key(rng)
                r.update({c: rnd_val(rng, c) for c in cols})
                rows.append(r)
            if rng.random() < 0.5:
                vals = ", ".join("(" + ", ".join(sql_lit(r[c]) for c in carried) + ")" for r in rows)
                query(conn, f"INSERT INTO {t} ({', '.join(carried)}) VALUES {vals}")
            else:
                assert ingest(conn, t, arrow_rows(rows, carried)) == len(rows)
            m.upsert(rows)
            return f"partial {carried} x{len(rows)}"
        pred_sql, pred = self.predicate(rng)
        if op == "delete":
            want = m.delete(pred)
            got = rowcount(conn, f"DELETE FROM {t} WHERE {pred_sql}")
            assert got == want, f"DELETE FROM {t} WHERE {pred_sql}: {got} rows, the model deleted {want}"
            return f"delete {want} WHERE {pred_sql}"
        col = rng.choice([c for c in self.values if c != "s"] or self.values)
        if col in ("amount", "total"):
            d = float(rng.randrange(1, 9))
            set_sql, assign = f"{col} = {col} * 2 + {d}", lambda r, c=col, d=d: {c: None if r[c] is None else r[c] * 2 + d}
        elif col == "n":
            v = rng.randrange(-50, 50)
            set_sql, assign = f"n = {v}", lambda r, v=v: {"n": v}
        else:
            v = rnd_val(rng, col, null_rate=0.2)
            set_sql, assign = f"{col} = {sql_lit(v)}", lambda r, c=col, v=v: {c: v}
        want = m.update(assign, pred)
        got = rowcount(conn, f"UPDATE {t} SET {set_sql} WHERE {pred_sql}")
        assert got == want, f"UPDATE {t} SET {set_sql} WHERE {pred_sql}: {got} rows, the model updated {want}"
        return f"update {want} SET {set_sql} WHERE {pred_sql}"

    def predicate(self, rng):
        """A WHERE clause and the same predicate in Python (NULL never matches)."""
        mod = rng.choice([7, 11, 13, 17])
        r = rng.randrange(mod)
        sql, preds = [f"id % {mod} = {r}"], [lambda row, mod=mod, r=r: row["id"] % mod == r]
        extra = rng.choice(["none", "region", "n", "amount_null"])
        cols = self.model.columns
        if extra == "region" and "region" in cols:
            v = rng.choice(REGIONS)
            sql.append(f"region = {sql_lit(v)}")
            preds.append(lambda row, v=v: row["region"] == v)
        elif extra == "n" and "n" in cols:
            v = rng.randrange(-50, 50)
            sql.append(f"n > {v}")
            preds.append(lambda row, v=v: row["n"] is not None and row["n"] > v)
        elif extra == "amount_null" and "amount" in cols:
            sql.append("amount IS NULL")
            preds.append(lambda row: row["amount"] is None)
        return " AND ".join(sql), lambda row: all(p(row) for p in preds)


def rowcount(conn, sql):
    cur = conn.cursor()
    try:
        cur.execute(sql)
        return cur.rowcount
    finally:
        cur.close()


# ---------------------------------------------------------------- where the writes end, where the lake is

def log_ends(conn, table):
    """Each bucket's log end (offsets are dense from 0): max(_offset) + 1 of
    the changelog, which is the end after this (single) writer's last write."""
    rows = query(conn, f'SELECT _bucket AS b, max(_offset) + 1 AS e FROM "{table}$changelog" GROUP BY 1').to_pylist()
    return {r["b"]: r["e"] for r in rows}


def parse_offsets(prop):
    out = {}
    for kv in (prop or "").split(","):
        if kv:
            b, o = kv.split(":")
            out[int(b)] = int(o)
    return out


def same_offsets(a, b):
    """Offset maps equal, a missing bucket counting as 0."""
    return all(a.get(x, 0) == b.get(x, 0) for x in set(a) | set(b))


class History:
    """The model's state after every write, with the log ends after it."""

    def __init__(self, model):
        self.model = model
        self.ends = [{}]
        self.states = [model.snapshot()]

    def add(self, ends):
        self.ends.append(ends)
        self.states.append(self.model.snapshot())

    def at(self, offsets):
        """The index of the latest write whose ends are offsets, or None (then
        the lake is not at a write boundary)."""
        for i in range(len(self.ends) - 1, -1, -1):
            if same_offsets(self.ends[i], offsets):
                return i
        return None


# ---------------------------------------------------------------- the readers

def tiered_offsets(conn, table):
    rows = query(conn, "SELECT bucket, tiered_offset FROM lakestream.tiering WHERE table_name = ?",
                 (f"default.{table}",)).to_pylist()
    return {r["bucket"]: r["tiered_offset"] for r in rows}


def ice_catalog(server):
    return SqlCatalog("lakestream", uri=f"sqlite:///{os.path.join(server.data_dir, 'iceberg.db')}")


def local_path(uri):
    assert uri.startswith("file://"), f"{uri} is not in a file:// warehouse"
    return uri[len("file://"):]


def duckdb_plan_read(tbl, snapshot_id):
    """The rows of pyiceberg's plan of the snapshot, read by DuckDB: each
    task's data file with its row numbers, minus the positions its position
    delete files name for that file. Returns (rows, data files, delete files)."""
    db = duckdb.connect()
    rows, ndel, ndata = [], set(), 0
    cols = [f.name for f in tbl.schema().fields]
    select = ", ".join(f'"{c}"' for c in cols)
    for task in tbl.scan(snapshot_id=snapshot_id).plan_files():
        ndata += 1
        path = local_path(task.file.file_path)
        deletes = []
        for d in task.delete_files:
            assert d.content == DataFileContent.POSITION_DELETES, \
                f"delete file {d.file_path} has content {d.content!r}: the lake writes position deletes only"
            deletes.append(local_path(d.file_path))
            ndel.add(d.file_path)
        if not deletes:
            t = db.sql(f"SELECT {select} FROM read_parquet(?, hive_partitioning = false)", params=[path]).to_arrow_table()
        else:
            t = db.sql(
                f"SELECT {select} FROM read_parquet(?, file_row_number = true, hive_partitioning = false) d "
                f"WHERE NOT EXISTS (SELECT 1 FROM read_parquet(?) x WHERE x.file_path = ? AND x.pos = d.file_row_number)",
                params=[path, deletes, task.file.file_path]).to_arrow_table()
        rows += t.to_pylist()
    return rows, ndata, len(ndel)


class Checker:
    """Compares every reader with the model; counts what it compared."""

    def __init__(self, server, spark, case, history):
        self.server, self.spark, self.case, self.h = server, spark, case, history
        self.lake_points = set()  # the writes whose state a lake reader was compared with
        self.deletes_seen = 0     # most position delete files in one plan
        self.spark_reads = 0
        self.timings = {}

    def timed(self, what, fn):
        t0 = time.perf_counter()
        try:
            return fn()
        finally:
            self.timings[what] = self.timings.get(what, 0.0) + time.perf_counter() - t0

    def fail_if(self, msg, step):
        if msg:
            pytest.fail(f"{self.case.name} after step {step}: {msg}\nserver log:\n{self.server.tail(15)}")

    def check(self, conn, step, with_spark):
        c, t, key = self.case, self.case.name, self.case.model.key
        want_now = self.h.states[-1]
        got = self.timed("select", lambda: query(conn, f"SELECT * FROM {t}").to_pylist())
        self.fail_if(state_diff(got, want_now, key, "SELECT (union)"), step)

        # "t$lake": the lake snapshot alone; its offsets read before and after
        # (a round may commit in between: then read again).
        for _ in range(5):
            before = tiered_offsets(conn, t)
            lake = self.timed("t$lake", lambda: query(conn, f'SELECT * FROM "{t}$lake"').to_pylist())
            if same_offsets(before, tiered_offsets(conn, t)):
                break
        else:
            pytest.fail(f"{t}: the lake moved during each of 5 reads of \"{t}$lake\"")
        self.fail_if(self.lake_diff(lake, before, '"t$lake"'), step)

        # pyiceberg, DuckDB over its plan and Spark at one snapshot. Before the
        # first round there is no Iceberg table or no snapshot: the lake is
        # then empty, as of no write.
        tbl = self.timed("pyiceberg", lambda: self.load())
        snap = tbl.current_snapshot() if tbl is not None else None
        if snap is None:
            self.fail_if(self.lake_diff([], {}, "the Iceberg table before its first snapshot"), step)
            return
        offsets = parse_offsets(tbl.properties.get("lakestream.tiered-offsets"))
        got = self.timed("pyiceberg", lambda: tbl.scan(snapshot_id=snap.snapshot_id).to_arrow().to_pylist())
        self.fail_if(self.lake_diff(got, offsets, f"pyiceberg scan of snapshot {snap.snapshot_id}"), step)
        got, _, ndel = self.timed("duckdb", lambda: duckdb_plan_read(tbl, snap.snapshot_id))
        self.deletes_seen = max(self.deletes_seen, ndel)
        self.fail_if(self.lake_diff(got, offsets, f"DuckDB over pyiceberg's plan of snapshot {snap.snapshot_id}"), step)
        if with_spark:
            self.spark_reads += 1
            got = self.timed("spark", lambda: [r.asDict() for r in self.spark.sql(
                f"SELECT * FROM lakestream.default.{t} VERSION AS OF {snap.snapshot_id}").collect()])
            self.fail_if(self.lake_diff(got, offsets, f"Spark at snapshot {snap.snapshot_id}"), step)

    def load(self):
        try:
            return ice_catalog(self.server).load_table(f"default.{self.case.name}")
        except (NoSuchTableError, NoSuchNamespaceError):
            return None

    def check_spark_current(self, step):
        """spark.table of the current snapshot (the plain way to read it)."""
        tbl = ice_catalog(self.server).load_table(f"default.{self.case.name}")
        offsets = parse_offsets(tbl.properties.get("lakestream.tiered-offsets"))
        got = [r.asDict() for r in self.spark.table(f"lakestream.default.{self.case.name}").collect()]
        tbl2 = ice_catalog(self.server).load_table(f"default.{self.case.name}")
        if tbl2.current_snapshot().snapshot_id == tbl.current_snapshot().snapshot_id:
            self.fail_if(self.lake_diff(got, offsets, "spark.table"), step)

    def lake_diff(self, rows, offsets, what):
        i = self.h.at(offsets)
        if i is None:
            return (f"{what}: the lake's tiered offsets {offsets} are no write's end offsets "
                    f"(the last writes ended at {self.h.ends[-3:]})")
        self.lake_points.add(i)
        return state_diff(rows, self.h.states[i], self.case.model.key, f"{what} (as of write {i}, offsets {offsets})")


def wait_lake_at(conn, table, ends, server, timeout=60):
    deadline = time.monotonic() + timeout
    got = {}
    while time.monotonic() < deadline:
        got = tiered_offsets(conn, table)
        if same_offsets(got, ends):
            return
        time.sleep(0.1)  # polling the tiering state: there is no event to wait on
    pytest.fail(f"{table}: the lake did not reach {ends} in {timeout} s (at {got})\n{server.tail(20)}")


# ---------------------------------------------------------------- 1: the model-based test

LAKE_OPTS = "'datalake.freshness'='300ms'"

CASES = {
    "last_row_partitioned": lambda: Case(
        "lr", "CREATE TABLE lr (region VARCHAR, id BIGINT, amount DOUBLE, n BIGINT, s VARCHAR, "
              "PRIMARY KEY (region, id)) PARTITIONED BY (region) "
              f"WITH ('bucket.num'='3', 'bucket.key'='id', {LAKE_OPTS})",
        # Partition values that need URL escaping in a path (docs/lake.md, "Paths").
        ["region", "id", "amount", "n", "s"], ["region", "id"], keys=200, key_regions=["eu", "ü", "a b/c", "%"]),
    "aggregation_sum": lambda: Case(
        "ag", "CREATE TABLE ag (id BIGINT, total DOUBLE, n BIGINT, region VARCHAR, PRIMARY KEY (id)) "
              "WITH ('bucket.num'='2', 'merge-engine'='aggregation', 'fields.total.agg'='sum', "
              f"{LAKE_OPTS})",
        ["id", "total", "n", "region"], ["id"], engine="aggregation", aggs={"total": "sum"}),
    "first_row": lambda: Case(
        "fr", "CREATE TABLE fr (id BIGINT, amount DOUBLE, region VARCHAR, PRIMARY KEY (id)) "
              f"WITH ('bucket.num'='3', 'merge-engine'='first_row', {LAKE_OPTS})",
        ["id", "amount", "region"], ["id"], engine="first_row", partial=False),
}

STEPS = 36
KILL_AT = {12, 25}
SPARK_EVERY = 6


@pytest.mark.parametrize("name", list(CASES))
def test_model_every_reader_sees_the_state(node, spark, name):
    case = CASES[name]()
    rng = random.Random(f"pk-lake-{name}")
    conn = connect(node)
    query(conn, case.ddl)
    h = History(case.model)
    chk = Checker(node, spark, case, h)
    t0 = time.perf_counter()
    done = []
    try:
        for step in range(1, STEPS + 1):
            done.append(case.write(rng, conn))
            h.add(log_ends(conn, case.name))
            if step in KILL_AT:
                node.kill9()
                node.start("--retention-check", "200ms")
                conn.close()
                conn = connect(node)
                done.append("kill -9, restart")
            if step % 2 == 0 or step in KILL_AT:
                chk.check(conn, step, with_spark=step % SPARK_EVERY == 0)
        # The lake catches up with the last write: every reader then sees the
        # final state, whatever the rounds in between left.
        wait_lake_at(conn, case.name, h.ends[-1], node)
        chk.check(conn, STEPS, with_spark=True)
        chk.check_spark_current(STEPS)
        st = query(conn, "SELECT rounds, last_error FROM lakestream.tiering WHERE table_name = ?",
                   (f"default.{case.name}",)).to_pylist()
        assert all(r["last_error"] is None for r in st), st
    finally:
        conn.close()
    points = sorted(chk.lake_points)
    # The lake was compared at several states between the first and the last
    # write (rounds ran between the writes), and its plan had deletes.
    assert len([p for p in points if 0 < p < STEPS]) >= 3, f"lake compared only at writes {points}"
    assert chk.deletes_seen > 0, "no plan had a position delete file"
    print(f"\n{name}: {STEPS} writes, {len(points)} lake states compared ({points}), "
          f"{chk.spark_reads} Spark reads, up to {chk.deletes_seen} delete files in a plan, "
          f"{time.perf_counter() - t0:.1f} s; by reader " +
          ", ".join(f"{k} {v:.1f} s" for k, v in sorted(chk.timings.items())))


# ---------------------------------------------------------------- 2: changes() after retention

def subscribe(uri, sql, out, ready):
    """Reads a changes() stream in a thread (ADBC releases the GIL while it waits)."""
    conn = flightsql.connect(uri, autocommit=True)
    cur = conn.cursor()
    cur.execute(sql)
    reader = cur.fetch_record_batch()
    ready.set()
    try:
        for b in reader:
            if b.num_rows:
                out.put(b.to_pylist())
    except Exception as e:  # the stream ends when the node stops
        out.put(e)


def collect(out, n, timeout=60):
    got, deadline = [], time.monotonic() + timeout
    while len(got) < n:
        try:
            batch = out.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            pytest.fail(f"changes() delivered {len(got)} of {n} records in {timeout} s")
        if isinstance(batch, Exception):
            raise batch
        got += batch
    return got


def test_changes_from_the_lake_give_the_logs_changelog(node):
    """After retention removed the head of a PK table's log, changes() from
    'earliest' reads the lake's history and then the log: the same +I, -U,
    +U, -D records, each with its bucket, offset and commit time."""
    conn = connect(node)
    try:
        query(conn, "CREATE TABLE ch (id BIGINT, v BIGINT, pad VARCHAR, PRIMARY KEY (id)) "
                    "WITH ('bucket.num'='2', 'datalake.freshness'='300ms', 'log.segment.bytes'='1MiB', "
                    "'log.retention'='1ms', 'log.compression'='none')")
        cols = "_change_type, _bucket, _offset, _commit_timestamp, id, v, pad"
        # A subscriber from before the first write captures the changelog as
        # it is written: rounds and retention run while the writes go on
        # (freshness 300 ms, retention 1 ms), so a "$changelog" read after the
        # writes may already miss the log's head.
        live, live_ready = queue.Queue(), threading.Event()
        threading.Thread(target=subscribe, daemon=True,
                         args=(node.uri, f"SELECT {cols} FROM changes('ch', 'earliest')", live, live_ready)).start()
        assert live_ready.wait(30)
        model = Model(["id", "v", "pad"], ["id"])
        keys = 4000
        for w in range(8):  # ~3 MB of change records: a few segments a bucket
            rows = [{"id": i, "v": w, "pad": f"{w:03d}-{i:06d}-" + "x" * 80} for i in range(keys) if (i + w) % 3]
            assert ingest(conn, "ch", arrow_rows_pad(rows)) == len(rows)
            model.upsert(rows)
            assert rowcount(conn, f"DELETE FROM ch WHERE id % 17 = {w}") == model.delete(lambda r, w=w: r["id"] % 17 == w)
        ends = log_ends(conn, "ch")
        before = collect(live, sum(ends.values()))
        assert len(before) == sum(ends.values())
        kinds = {r["_change_type"] for r in before}
        assert kinds == {"+I", "-U", "+U", "-D"}, kinds
        wait_lake_at(conn, "ch", ends, node)
        deadline = time.monotonic() + 60
        while True:  # retention runs on its own schedule once the rows are tiered
            starts = query(conn, 'SELECT _bucket, min(_offset) AS s FROM "ch$changelog" GROUP BY 1').to_pylist()
            if len(starts) == 2 and all(r["s"] > 0 for r in starts):
                break
            assert time.monotonic() < deadline, f"retention deleted no segment of the PK table: {starts}"
            time.sleep(0.2)  # polling the retained start: there is no event to wait on

        got_state = query(conn, "SELECT * FROM ch").to_pylist()
        assert state_diff(got_state, model.rows, ["id"], "SELECT after retention") is None, \
            state_diff(got_state, model.rows, ["id"], "SELECT after retention")

        out, ready = queue.Queue(), threading.Event()
        threading.Thread(target=subscribe, daemon=True,
                         args=(node.uri, f"SELECT {cols} FROM changes('ch', 'earliest')", out, ready)).start()
        assert ready.wait(30)
        got = collect(out, len(before))
        pos = lambda r: (r["_bucket"], r["_offset"])  # noqa: E731
        assert len(got) == len(before), f"{len(got)} records, the log had {len(before)}"
        assert sorted(got, key=pos) == sorted(before, key=pos), first_record_difference(got, before, pos)
        for b in (0, 1):  # each bucket in offset order
            offs = [r["_offset"] for r in got if r["_bucket"] == b]
            assert offs == sorted(offs), f"bucket {b}: offsets out of order"
    finally:
        conn.close()


def arrow_rows_pad(rows):
    return pa.table({"id": pa.array([r["id"] for r in rows], pa.int64()),
                     "v": pa.array([r["v"] for r in rows], pa.int64()),
                     "pad": pa.array([r["pad"] for r in rows], pa.string())})


def first_record_difference(got, want, pos):
    g, w = sorted(got, key=pos), sorted(want, key=pos)
    for a, b in zip(g, w):
        if a != b:
            return f"first difference: got {a}, the log had {b}"
    return f"{len(g)} records vs {len(w)}"
