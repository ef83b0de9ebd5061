"""Batch and streaming writes. Each task appends its partition as calls of
one idempotent writer (docs/flight.md, "Idempotent writes") whose id is
derived from what identifies the task's data — the job and partition for
a batch write, the query, micro-batch and partition for a stream — so an
attempt that runs again (a retried task, a micro-batch replayed after a
restart) stores nothing twice. docs/spark.md, "Write-back", says what a
whole job guarantees."""
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, ByteType, DateType, DecimalType, DoubleType,
                               FloatType, IntegerType, LongType, MapType, ShortType, StringType, StructType,
                               TimestampNTZType, TimestampType)

from .._client import IdempotentWriter, quote_ident, quote_string, writer_id

_SIMPLE = {LongType: "BIGINT", IntegerType: "INTEGER", ShortType: "SMALLINT", ByteType: "TINYINT",
           DoubleType: "DOUBLE", FloatType: "FLOAT", StringType: "VARCHAR", BooleanType: "BOOLEAN",
           DateType: "DATE", TimestampType: "TIMESTAMPTZ", TimestampNTZType: "TIMESTAMP", BinaryType: "BLOB"}


def sql_type(dt):
    """The Lakestream SQL type of a Spark type (docs/sql.md, "Types")."""
    if type(dt) in _SIMPLE:
        return _SIMPLE[type(dt)]
    if isinstance(dt, DecimalType):
        return f"DECIMAL({dt.precision},{dt.scale})"
    if isinstance(dt, ArrayType):
        return sql_type(dt.elementType) + "[]"
    if isinstance(dt, StructType):
        return "STRUCT(" + ", ".join(f"{quote_ident(f.name)} {sql_type(f.dataType)}" for f in dt.fields) + ")"
    if isinstance(dt, MapType):
        return f"MAP({sql_type(dt.keyType)}, {sql_type(dt.valueType)})"
    raise ValueError(f"lakestream: no column type for Spark's {dt.simpleString()}")


def _names(value):
    return [c.strip() for c in value.split(",") if c.strip()] if value else []


def create_table_sql(opts, schema):
    """CREATE TABLE IF NOT EXISTS of the DataFrame's schema, with the
    options primaryKey, bucketKey, buckets and table.<option>."""
    pk = _names(opts.get("primaryKey"))
    missing = [c for c in pk + _names(opts.get("bucketKey")) if c not in schema.fieldNames()]
    if missing:
        raise ValueError(f"lakestream: key column(s) {missing} are not columns of the DataFrame")
    cols = []
    for f in schema.fields:
        null = "" if f.nullable and f.name not in pk else " NOT NULL"
        cols.append(f"{quote_ident(f.name)} {sql_type(f.dataType)}{null}")
    if pk:
        cols.append("PRIMARY KEY (" + ", ".join(quote_ident(c) for c in pk) + ")")
    with_ = dict(opts.table_options())
    if opts.get("bucketKey"):
        with_["bucket.key"] = ",".join(_names(opts.get("bucketKey")))
    if opts.get("buckets"):
        with_["bucket.num"] = opts.get("buckets")
    sql = f"CREATE TABLE IF NOT EXISTS {opts.table()} ({', '.join(cols)})"
    if with_:
        sql += " WITH (" + ", ".join(f"{quote_string(k)} = {quote_string(v)}" for k, v in sorted(with_.items())) + ")"
    return sql


def prepare_table(opts, schema, overwrite):
    """Before any task writes (on the driver): creates the table when
    asked (option create = true) and empties it for an overwrite."""
    client = opts.client()
    table = opts.table()
    try:
        try:
            client.offsets(table)
            exists = True
        except LookupError:
            exists = False
        create = opts.get("create", "false").lower() == "true"
        if not exists:
            if not create:
                raise ValueError(f"lakestream: table {table} does not exist (option create = true creates it)")
            client.execute(create_table_sql(opts, schema))
            return
        if overwrite:
            ddl = client.execute(f"SHOW CREATE TABLE {table}").column("sql")[0].as_py()
            if "PRIMARY KEY" in ddl.upper():
                client.execute(f"DELETE FROM {table}")
            else:
                # A log table is append-only: the table is made again, with
                # its definition and options as they were.
                client.execute(f"DROP TABLE {table}")
                client.execute(ddl)
    finally:
        client.close()


class Written(WriterCommitMessage):
    def __init__(self, partition, rows):
        self.partition, self.rows = partition, rows


def _task():
    from pyspark import TaskContext
    ctx = TaskContext.get()
    if ctx is None:
        raise RuntimeError("lakestream: a writer runs in a Spark task")
    return ctx


def _write(opts, batches, wid, partition):
    client = opts.client()
    try:
        w = IdempotentWriter(client, opts.table(), wid, opts.rows_per_call())
        for b in batches:
            w.write(b)
        return Written(partition, w.close())
    finally:
        client.close()


class BatchWriter(DataSourceArrowWriter):
    """df.write: task p of job j writes as writer (j, p). The job id is
    drawn when the write is planned, so a job run again appends again."""

    def __init__(self, opts, job):
        self.opts, self.job = opts, job

    def write(self, iterator):
        p = _task().partitionId()
        return _write(self.opts, iterator, writer_id("lakestream-batch", self.job, p), p)

    def commit(self, messages):
        # Every task's rows are stored when it reports: nothing is left
        # to publish.
        pass

    def abort(self, messages):
        # Rows of tasks that completed stay (docs/spark.md, "Write-back").
        pass


class StreamWriter(DataSourceStreamArrowWriter):
    """writeStream: task p of micro-batch b of query q writes as writer
    (q, b, p). q is the query's id, kept in its checkpoint: a micro-batch
    that a restarted query runs again re-sends the same calls."""

    def __init__(self, opts):
        self.opts = opts

    def write(self, iterator):
        ctx = _task()
        query, batch = ctx.getLocalProperty("sql.streaming.queryId"), ctx.getLocalProperty("streaming.sql.batchId")
        if not query or batch is None:
            raise RuntimeError("lakestream: the stream writer found no query id or batch id in its task")
        p = ctx.partitionId()
        wid = writer_id("lakestream-stream", query, batch, p)
        return _write(self.opts, iterator, wid, p)

    def commit(self, messages, batchId):
        pass

    def abort(self, messages, batchId):
        pass
