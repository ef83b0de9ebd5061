"""A streaming query of test_spark_source.py, run as its own process so that
the test can kill it with SIGKILL: it copies table src into table dst
through format("lakestream") with a checkpoint, and runs until killed.

    python spark_stream_job.py <uri> <src> <dst> <checkpoint dir>"""
import sys

import sparkutil
from lakestream.spark import LakestreamDataSource


def main(uri, src, dst, checkpoint):
    spark = sparkutil.session("lakestream-stream", master="local[2]", memory="512m", shuffle=2)
    spark.dataSource.register(LakestreamDataSource)
    rows = (spark.readStream.format("lakestream").option("uri", uri)
            .option("startingOffsets", "earliest").load(src))
    q = (rows.writeStream.format("lakestream").option("uri", uri).option("create", "true")
         .option("buckets", "2").option("rowsPerCall", "300")
         .option("checkpointLocation", checkpoint).trigger(processingTime="300 milliseconds").start(dst))
    print("started", q.id, flush=True)
    q.awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:5])
