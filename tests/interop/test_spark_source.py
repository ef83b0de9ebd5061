"""format("lakestream") in Spark (python/lakestream/spark, docs/spark.md):

- a batch read of 1M rows equals the Flight SQL answer, with a filter and
  a projection pushed into the scan; a table split between lake and log
  reads as one table;
- df.write back into a new table reads back the same rows over ADBC, and
  a task that fails after it stored part of its partition is retried
  without a duplicate;
- a streaming copy with a checkpoint, killed (SIGKILL) and restarted while
  a writer ingests, holds every row exactly once.

One node and one SparkSession (local[2], a failed task tried up to 3
times) for the module."""
import datetime
import os
import re
import signal
import subprocess
import sys
import threading
import time

import adbc_driver_flightsql.dbapi as flightsql
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from conftest import Server
from util import gen_rows, ingest, query
import sparkutil
from sparkutil import need

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    d = tmp_path_factory.mktemp("sparksrc")
    s = Server(d / "data", d / "server.log").start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def conn(node):
    c = flightsql.connect(node.uri, autocommit=True)
    yield c
    c.close()


@pytest.fixture(scope="module")
def spark(node):
    try:
        from lakestream.spark import LakestreamDataSource
    except ImportError as e:
        need(f"pyspark / the lakestream package ({e})")
    spark = sparkutil.session("lakestream-source", master="local[2,3]", memory="1g", shuffle=2, conf={
        "spark.sql.python.filterPushdown.enabled": "true",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "2000",
    })
    spark.dataSource.register(LakestreamDataSource)
    # The functions the tests hand to Spark call util's helpers: the
    # workers (their working directory is pytest's, not this one) could
    # not import util, so it travels with them by value.
    import util
    from pyspark import cloudpickle
    cloudpickle.register_pickle_by_value(util)
    yield spark
    spark.stop()


def load(spark, node, table, **opts):
    r = spark.read.format("lakestream").option("uri", node.uri)
    for k, v in opts.items():
        r = r.option(k, v)
    return r.load(table)


def sorted_table(t, key="id"):
    return t.sort_by(key).combine_chunks()


# ---------------------------------------------------------------- batch reads

@pytest.fixture(scope="module")
def big(conn):
    """1M rows in 4 buckets."""
    query(conn, "CREATE TABLE big (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ) "
                "WITH ('bucket.num'='4', 'bucket.key'='id')")
    for start in range(0, 1_000_000, 250_000):
        ingest(conn, "big", gen_rows(start, 250_000))
    return "big"


def test_batch_read_of_1m_rows_equals_flight_sql(spark, node, conn, big):
    df = load(spark, node, big)
    assert df.rdd.getNumPartitions() > 1, "a plain scan of 4 buckets gave one partition"
    whole = df.agg({"id": "sum", "amount": "sum", "*": "count"}).collect()[0].asDict()
    want = query(conn, "SELECT count(*) n, sum(id) s, sum(amount) a FROM big").to_pylist()[0]
    assert whole["count(1)"] == want["n"] == 1_000_000
    assert whole["sum(id)"] == want["s"]
    assert whole["sum(amount)"] == pytest.approx(want["a"], rel=1e-12)

    # A filter and a projection, pushed: Spark keeps no Filter of its own
    # and the scan reads the columns of the schema given (Python data
    # sources have no column-pruning hook: a schema is how to ask for fewer).
    pushed = (spark.read.format("lakestream").option("uri", node.uri).option("pushFilters", "true")
              .schema("id BIGINT, amount DOUBLE, kind STRING")
              .load(big).filter("kind = 'buy' AND amount > 500").select("id", "amount"))
    plan = pushed._jdf.queryExecution().executedPlan().toString()
    assert re.search(r"\bFilter \(", plan) is None, f"a filter was left to Spark:\n{plan}"
    assert "ts#" not in plan, f"the scan reads a column not asked for:\n{plan}"
    got = sorted_table(pushed.toArrow())
    flight = sorted_table(query(conn, "SELECT id, amount FROM big WHERE kind = 'buy' AND amount > 500"))
    assert got.num_rows == flight.num_rows > 50_000
    assert got.column("id").equals(flight.column("id"))
    assert got.column("amount").equals(flight.column("amount"))


def test_query_option_reads_the_statement(spark, node, conn, big):
    df = (spark.read.format("lakestream").option("uri", node.uri)
          .option("query", "SELECT kind, count(*) AS n FROM big GROUP BY kind").load())
    got = sorted(tuple(r) for r in df.collect())
    want = sorted((r["kind"], r["n"]) for r in query(conn, "SELECT kind, count(*) AS n FROM big GROUP BY kind").to_pylist())
    assert got == want


def tiered_rows(conn, table):
    t = query(conn, "SELECT tiered_offset, lag_rows FROM lakestream.tiering "
                    f"WHERE table_name = 'default.{table}'").to_pylist()
    return sum(r["tiered_offset"] for r in t)


def test_lake_and_log_read_as_one_table(spark, node, conn):
    """Rows in the lake and rows only in the log, read by one Spark read:
    a read counts when tiering had not taken the tail by its end. Rounds
    run every 30 s: the tail is ingested right after one, and the read has
    the rest of the interval."""
    query(conn, "CREATE TABLE split (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ) "
                "WITH ('bucket.num'='3', 'bucket.key'='id', 'datalake.freshness'='30s')")
    n = 30_000
    ingest(conn, "split", gen_rows(0, n))
    for attempt in range(3):
        deadline = time.monotonic() + 120
        while tiered_rows(conn, "split") < n:
            assert time.monotonic() < deadline, f"the lake did not take {n} rows in 120 s"
            time.sleep(0.05)  # polling the tiering state: there is no event to wait on
        ingest(conn, "split", gen_rows(n, 5_000))  # the tail, in the log
        n += 5_000
        got = sorted_table(load(spark, node, "split").toArrow())
        if tiered_rows(conn, "split") < n:
            break  # the tail was still in the log only when the read ended
    else:
        pytest.fail("tiering took the tail before every read ended: no read of lake and log together")
    assert got.column("id").to_pylist() == list(range(n))
    want = sorted_table(query(conn, "SELECT * FROM split"))
    assert got.column("amount").equals(want.column("amount"))
    assert got.column("ts").cast(pa.timestamp("us", tz="UTC")).equals(want.column("ts"))

    # A filter it cannot push (arithmetic) is Spark's.
    mod = load(spark, node, "split").filter("id % 10000 = 7").select("id").toArrow()
    assert sorted(mod.column("id").to_pylist()) == list(range(7, n, 10_000))


# ---------------------------------------------------------------- write-back

def save(df, node, table, mode="append", **opts):
    w = df.write.format("lakestream").option("uri", node.uri).mode(mode)
    for k, v in opts.items():
        w = w.option(k, v)
    w.save(table)


def test_write_back_into_a_new_table(spark, node, conn, big):
    src = load(spark, node, big).filter("id % 10 = 3")
    save(src, node, "back", create="true", buckets="2", bucketKey="id")
    got = sorted_table(query(conn, "SELECT * FROM back"))
    want = sorted_table(query(conn, "SELECT * FROM big WHERE id % 10 = 3"))
    assert got.num_rows == want.num_rows == 100_000
    for c in want.column_names:
        assert got.column(c).equals(want.column(c)), c
    ddl = query(conn, "SHOW CREATE TABLE back").column("sql")[0].as_py()
    assert "'bucket.num' = '2'" in ddl.replace('"', "'") or "bucket.num" in ddl

    # overwrite: the table holds the new rows only.
    save(src.filter("id < 1000"), node, "back", mode="overwrite")
    assert query(conn, "SELECT count(*) n FROM back").column("n")[0].as_py() == 100


def test_write_back_primary_key_table(spark, node, conn):
    df = spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id LONG, v STRING")
    save(df, node, "pkback", create="true", primaryKey="id")
    save(spark.createDataFrame([(2, "B")], "id LONG, v STRING"), node, "pkback")
    assert query(conn, "SELECT id, v FROM pkback ORDER BY id").to_pylist() == [
        {"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 3, "v": "c"}]
    assert "PRIMARY KEY" in query(conn, "SHOW CREATE TABLE pkback").column("sql")[0].as_py().upper()


def test_task_retry_writes_nothing_twice(spark, node, conn, tmp_path):
    """Partition 1's first attempt fails once the table holds some of its
    rows (calls of 500 rows already stored: it sent 20,000 of its 25,000
    rows, more than the buffers between the Python workers hold); Spark
    runs it again, and the calls the first attempt stored are not stored
    twice."""
    query(conn, "CREATE TABLE retried (id BIGINT NOT NULL, part BIGINT)")
    marker = str(tmp_path / "failed")
    uri = node.uri

    def fail_once(batches):
        from pyspark import TaskContext
        ctx = TaskContext.get()
        sent = 0
        for b in batches:
            out = pa.RecordBatch.from_arrays([b.column(0), pc.divide(b.column(0), 25_000)], names=["id", "part"])
            yield out
            sent += b.num_rows
            if ctx.partitionId() == 1 and ctx.attemptNumber() == 0 and sent >= 20_000:
                c = flightsql.connect(uri, autocommit=True)
                stored, deadline = 0, time.monotonic() + 60
                while stored == 0 and time.monotonic() < deadline:
                    stored = query(c, "SELECT count(*) n FROM retried WHERE part = 1").column("n")[0].as_py()
                    time.sleep(0.05)  # the writer stores concurrently: poll the table
                c.close()
                with open(marker, "w") as f:
                    f.write(str(stored))
                raise RuntimeError("injected failure after rows were stored")

    df = spark.range(0, 100_000, numPartitions=4).mapInArrow(fail_once, "id LONG, part LONG")
    save(df, node, "retried", rowsPerCall="500")
    with open(marker) as f:
        stored_before = int(f.read())
    assert stored_before > 0, "the failed attempt stored nothing: the retry proved nothing"
    ids = query(conn, "SELECT id FROM retried").column("id").to_pylist()
    assert len(ids) == 100_000 and sorted(ids) == list(range(100_000))


def test_failed_job_keeps_what_its_tasks_stored(spark, node, conn):
    """A job is not atomic (docs/spark.md, "Write-back"): partition 3 fails
    on every attempt, save() raises, and the table keeps the rows of the
    calls the tasks stored — each once, none of partition 3 past its
    failure."""
    query(conn, "CREATE TABLE halfway (id BIGINT NOT NULL)")

    def fail_at_3(batches):
        from pyspark import TaskContext
        for b in batches:
            if TaskContext.get().partitionId() == 3 and pc.max(b.column(0)).as_py() >= 3 * 10_000 + 5_000:
                raise RuntimeError("partition 3 always fails half-way")
            yield b

    df = spark.range(0, 40_000, numPartitions=4).mapInArrow(fail_at_3, "id LONG")
    with pytest.raises(Exception, match="always fails half-way"):
        save(df, node, "halfway", rowsPerCall="1000")
    ids = query(conn, "SELECT id FROM halfway").column("id").to_pylist()
    assert len(ids) == len(set(ids)), "a row stored twice"
    assert not [i for i in ids if i >= 35_000], "rows of partition 3 past its failure"
    assert set(ids) <= set(range(35_000))


# ---------------------------------------------------------------- streaming

def test_streaming_read_starts_at_a_timestamp(spark, node, conn):
    """startingOffsets "timestamp:<ISO>" starts each bucket at its first row
    committed at or after the mark (docs/spark.md): the query reads the rows
    written after it, none before, and then what comes next."""
    query(conn, "CREATE TABLE s_ts (id BIGINT NOT NULL, v BIGINT) WITH ('bucket.num'='2', 'bucket.key'='id')")

    def rows(start, n):
        return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "v": pa.array([start] * n, pa.int64())})

    ingest(conn, "s_ts", rows(0, 500))
    # Commit timestamps are the node's clock, this machine's: every row of
    # a write made after mark is committed at or after it.
    last = query(conn, 'SELECT max(_commit_timestamp) t FROM "s_ts$changelog"').column("t")[0].as_py()
    while datetime.datetime.now(datetime.timezone.utc) <= last:
        time.sleep(0.001)  # the next write's commit time must be past the first's
    mark = datetime.datetime.now(datetime.timezone.utc)
    ingest(conn, "s_ts", rows(500, 300))
    q = (spark.readStream.format("lakestream").option("uri", node.uri)
         .option("startingOffsets", f"timestamp:{mark.isoformat()}").load("s_ts")
         .select("id").writeStream.format("memory").queryName("s_ts_copy").start())
    try:
        q.processAllAvailable()
        assert sorted(r.id for r in spark.sql("SELECT id FROM s_ts_copy").collect()) == list(range(500, 800))
        ingest(conn, "s_ts", rows(800, 100))
        q.processAllAvailable()
        assert sorted(r.id for r in spark.sql("SELECT id FROM s_ts_copy").collect()) == list(range(500, 900))
    finally:
        q.stop()


def count(conn, table):
    return query(conn, f"SELECT count(*) n FROM {table}").column("n")[0].as_py()


def test_streaming_copy_killed_and_restarted_is_exactly_once(node, conn, tmp_path):
    """A producer ingests 200 rows every 100 ms into s_src while a streaming
    query copies s_src into s_dst. Once the copy holds rows, the query is
    killed with SIGKILL and started again on its checkpoint; once the
    restarted query has copied more, the producer stops, and the copy must
    end up with every row of s_src once."""
    query(conn, "CREATE TABLE s_src (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ) "
                "WITH ('bucket.num'='3', 'bucket.key'='id')")
    step, produced, stop = 200, [0], threading.Event()

    def produce():
        with flightsql.connect(node.uri, autocommit=True) as c:
            while not stop.is_set() and produced[0] < 3000 * step:  # runs until the test stops it
                ingest(c, "s_src", gen_rows(produced[0], step))
                produced[0] += step
                time.sleep(0.1)  # a steady producer, ~2,000 rows/s at most

    checkpoint = str(tmp_path / "checkpoint")
    log_path = tmp_path / "job.log"
    log = open(log_path, "a")

    def start_job():
        return subprocess.Popen([sys.executable, os.path.join(HERE, "spark_stream_job.py"), node.uri, "s_src",
                                 "s_dst", checkpoint], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def copied():
        try:
            return count(conn, "s_dst")
        except flightsql.Error:
            return 0  # the job creates s_dst

    def wait_copied(job, more_than, what):
        deadline = time.monotonic() + 300
        while copied() <= more_than:
            if job.poll() is not None:
                pytest.fail(f"{what}: the streaming job exited: {open(log_path).read()[-3000:]}")
            assert time.monotonic() < deadline, f"{what}: nothing copied in 300 s: {open(log_path).read()[-3000:]}"
            time.sleep(0.1)  # polling the copy: there is no event to wait on

    producer = threading.Thread(target=produce, daemon=True)
    job = start_job()
    try:
        producer.start()
        wait_copied(job, 0, "first start")
        assert producer.is_alive(), "the producer had stopped before the kill"
        os.killpg(job.pid, signal.SIGKILL)
        job.wait(30)
        at_kill, produced_at_kill = copied(), produced[0]
        job = start_job()
        # More than the producer had stored at the kill: the restarted job
        # has copied rows ingested after the kill, so the producer ran on.
        wait_copied(job, max(at_kill, produced_at_kill), "after the restart")
        stop.set()
        producer.join(60)
        total = produced[0]
        assert total > produced_at_kill, "the producer stopped before the restart: nothing ingested meanwhile"
        deadline = time.monotonic() + 300
        while copied() < total:
            if job.poll() is not None:
                pytest.fail(f"the restarted job exited: {open(log_path).read()[-3000:]}")
            assert time.monotonic() < deadline, f"copy holds {copied()} of {total} rows after 300 s"
            time.sleep(0.2)  # polling the copy: there is no event to wait on
        ids = query(conn, "SELECT id FROM s_dst").column("id").to_pylist()
        assert sorted(ids) == list(range(total)), f"{len(ids)} rows for {total} ids ({at_kill} copied at the kill)"
        src = sorted_table(query(conn, "SELECT id, amount, kind, ts FROM s_src"))
        dst = sorted_table(query(conn, "SELECT id, amount, kind, ts FROM s_dst"))
        for c in src.column_names:
            assert dst.column(c).equals(src.column(c)), c
        print(f"\nstreaming copy: {total} rows, {at_kill} copied at the kill, every row once")
    finally:
        stop.set()
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait(30)
        log.close()
