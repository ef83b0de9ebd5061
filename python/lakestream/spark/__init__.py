"""Lakestream as a Spark Python data source (pyspark >= 4.0):

    from lakestream.spark import LakestreamDataSource
    spark.dataSource.register(LakestreamDataSource)
    spark.read.format("lakestream").option("uri", "grpc://host:31337").load("db.t")

Batch reads (partitions = the Flight endpoints of the scan), batch writes
(each task an idempotent writer), streaming reads (offsets = per-bucket
positions) and streaming writes (exactly once per micro-batch).
docs/spark.md describes the options."""
from ._source import LakestreamDataSource

__all__ = ["LakestreamDataSource"]
