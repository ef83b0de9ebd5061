"""Spark (local[2]) reading N rows through format("lakestream") against Spark
reading the same rows from Parquet files on local disk (docs/benchmarks.md,
"Spark data source").

Starts a node of bin/lakestream in a temporary directory, loads N rows of
(id BIGINT, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ) into a table of 4
buckets and into 4 Parquet files (zstd), and times a full read of each into
Spark's noop sink (every column materialized, nothing written), best of
--runs after one warm-up.

    .venv/bin/python bench/spark_source.py --rows 5000000"""
import argparse
import os
import socket
import subprocess
import tempfile
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rows(start, n):
    rng = np.random.default_rng(start)
    ids = np.arange(start, start + n, dtype=np.int64)
    kinds = np.array(["click", "view", "buy", "return"])
    return pa.table({
        "id": ids,
        "amount": rng.random(n) * 1000.0,
        "kind": pa.array(kinds[rng.integers(0, 4, n)], pa.string()),
        "ts": pa.array((1_700_000_000_000_000 + ids).astype("datetime64[us]"), pa.timestamp("us", tz="UTC")),
    })


def start_node(binary, data, port):
    proc = subprocess.Popen([binary, "serve", "--data-dir", data, "--listen", f"127.0.0.1:{port}", "--http", "off"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.05)  # polling a port: there is no event to wait on
    proc.kill()
    raise RuntimeError("node did not listen in 60 s")


def spark_session(app, memory):
    """A local[2] SparkSession on loopback, in UTC, without the UI, with the
    lakestream data source registered; its Python workers run this
    interpreter, so they import the lakestream package of this venv."""
    from pyspark.sql import SparkSession
    from lakestream.spark import LakestreamDataSource
    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (SparkSession.builder.master("local[2]").appName(app)
             .config("spark.driver.memory", memory).config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.pyspark.python", sys.executable).config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(LakestreamDataSource)
    return spark


def timed(fn, runs):
    fn()  # warm-up: JIT, Python workers, the node's read cache
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "bin", "lakestream"))
    args = ap.parse_args()

    import adbc_driver_flightsql.dbapi as flightsql

    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        node = start_node(args.bin, os.path.join(tmp, "data"), port)
        uri = f"grpc://127.0.0.1:{port}"
        try:
            pdir = os.path.join(tmp, "parquet")
            os.makedirs(pdir)
            with flightsql.connect(uri, autocommit=True) as conn, conn.cursor() as cur:
                cur.execute("CREATE TABLE bench (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ) "
                            "WITH ('bucket.num' = '4', 'bucket.key' = 'id', 'datalake.enabled' = 'false')")
                chunk = 500_000
                for i, start in enumerate(range(0, args.rows, chunk)):
                    t = rows(start, min(chunk, args.rows - start))
                    cur.adbc_ingest("bench", t, mode="append")
                    pq.write_table(t, os.path.join(pdir, f"part-{i:04d}.parquet"), compression="zstd")
            spark = spark_session("lakestream-bench", "2g")
            parquet = timed(lambda: spark.read.parquet(pdir).write.format("noop").mode("overwrite").save(), args.runs)
            source = timed(lambda: spark.read.format("lakestream").option("uri", uri).load("bench")
                           .write.format("noop").mode("overwrite").save(), args.runs)
            n = spark.read.format("lakestream").option("uri", uri).load("bench").count()
            assert n == args.rows, f"the data source read {n} rows of {args.rows}"
            spark.stop()
        finally:
            node.terminate()
            node.wait(60)
    print(f"rows                 {args.rows:,}")
    print(f"parquet (local disk) {parquet:7.2f} s  {args.rows / parquet / 1e6:6.2f} M rows/s")
    print(f"format('lakestream') {source:7.2f} s  {args.rows / source / 1e6:6.2f} M rows/s")
    print(f"ratio                {source / parquet:7.2f}x")


if __name__ == "__main__":
    main()
