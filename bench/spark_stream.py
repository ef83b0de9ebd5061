"""End-to-end latency of a Spark streaming query over format("lakestream"):
from the start of the ingest call that wrote a row to the moment the
micro-batch holding it reaches the query's output (docs/benchmarks.md,
"Spark data source").

Starts a node of bin/lakestream in a temporary directory; a producer
thread ingests --batch rows every --interval seconds for --seconds into a
table of 2 buckets, each row carrying the wall-clock time its call started;
a streaming query (local[2], micro-batches as fast as Spark runs them, the
default trigger) reads the table from "latest" and, in foreachBatch, takes
each row's latency as the time the batch is handed to the sink minus its
call's start. Prints p50, p99 and max over every row, and the micro-batch
count.

    .venv/bin/python bench/spark_stream.py --seconds 30"""
import argparse
import os
import tempfile
import threading
import time

import numpy as np
import pyarrow as pa

from spark_source import free_port, spark_session, start_node


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30.0, help="how long the producer ingests")
    ap.add_argument("--batch", type=int, default=100, help="rows per ingest call")
    ap.add_argument("--interval", type=float, default=0.05, help="seconds between ingest calls")
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "bin", "lakestream"))
    args = ap.parse_args()

    import adbc_driver_flightsql.dbapi as flightsql

    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        node = start_node(args.bin, os.path.join(tmp, "data"), port)
        uri = f"grpc://127.0.0.1:{port}"
        latencies, batches, produced = [], [0], [0]
        try:
            with flightsql.connect(uri, autocommit=True) as conn, conn.cursor() as cur:
                cur.execute("CREATE TABLE lat (id BIGINT NOT NULL, sent_us BIGINT NOT NULL) "
                            "WITH ('bucket.num' = '2', 'bucket.key' = 'id')")
            spark = spark_session("lakestream-stream-bench", "1g")

            def sink(df, _batch_id):
                sent = df.select("sent_us").toArrow().column("sent_us").to_numpy()
                now = time.time_ns() // 1000
                latencies.extend((now - sent).tolist())
                batches[0] += 1

            q = (spark.readStream.format("lakestream").option("uri", uri).option("startingOffsets", "latest")
                 .load("lat").writeStream.foreachBatch(sink)
                 .option("checkpointLocation", os.path.join(tmp, "checkpoint")).start())
            while q.lastProgress is None:  # the first (empty) micro-batch has run: the query reads from here
                time.sleep(0.05)  # polling Spark's progress: there is no event to wait on

            def produce():
                with flightsql.connect(uri, autocommit=True) as c, c.cursor() as pcur:
                    end = time.monotonic() + args.seconds
                    while time.monotonic() < end:
                        sent = time.time_ns() // 1000
                        ids = np.arange(produced[0], produced[0] + args.batch, dtype=np.int64)
                        pcur.adbc_ingest("lat", pa.table({"id": ids, "sent_us": np.full(args.batch, sent, np.int64)}),
                                         mode="append")
                        produced[0] += args.batch
                        time.sleep(args.interval)  # a steady producer

            producer = threading.Thread(target=produce)
            producer.start()
            producer.join()
            deadline = time.monotonic() + 120
            while len(latencies) < produced[0]:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the query output {len(latencies)} of {produced[0]} rows in 120 s")
                time.sleep(0.05)  # polling the sink's count: there is no event to wait on
            q.stop()
            spark.stop()
        finally:
            node.terminate()
            node.wait(60)
    lat = np.array(latencies) / 1000.0
    assert len(lat) == produced[0], f"{len(lat)} rows out for {produced[0]} in: a row twice"
    print(f"rows                 {produced[0]:,} in {args.seconds:.0f} s ({produced[0] / args.seconds:,.0f} rows/s)")
    print(f"micro-batches        {batches[0]:,}")
    print(f"latency p50          {np.percentile(lat, 50):8.1f} ms")
    print(f"latency p99          {np.percentile(lat, 99):8.1f} ms")
    print(f"latency max          {lat.max():8.1f} ms")


if __name__ == "__main__":
    main()
