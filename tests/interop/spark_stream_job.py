"""A streaming query of test_spark_source.py, run as its own process so that
the test can kill it with SIGKILL: it copies table src into table dst
through format("lakestream") with a checkpoint, and runs until killed.

    python spark_stream_job.py <uri> <src> <dst> <checkpoint dir>"""
import os
import sys

from pyspark.sql import SparkSession

from lakestream.spark import LakestreamDataSource


def main(uri, src, dst, checkpoint):
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers import lakestream from this venv
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    spark = (SparkSession.builder.master("local[2]").appName("lakestream-stream")
             .config("spark.driver.memory", "512m")
             .config("spark.pyspark.python", sys.executable)
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.ui.enabled", "false")
             .config("spark.python.authenticate.socketTimeout", "120s")  # Python workers start slowly on a loaded machine
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
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
