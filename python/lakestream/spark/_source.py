"""The data source: options, schema, and which reader or writer Spark gets.
docs/spark.md is the user's page of it."""
import uuid

from pyspark.sql.datasource import DataSource

from .._client import Client, full_name, quote_ident

DEFAULT_ROWS_PER_CALL = 256 * 1024


class Options:
    """The data source's options, read case-insensitively (Spark folds
    some keys, not all). Every option it reads is listed in docs/spark.md;
    an unknown one is refused rather than ignored."""

    KNOWN = {"uri", "username", "password", "path", "table", "query", "create", "primarykey", "bucketkey",
             "buckets", "rowspercall", "startingoffsets", "pushfilters"}
    # Spark's own, which it passes to the source too: used by Spark.
    SPARKS = {"checkpointlocation"}

    def __init__(self, options):
        self.raw = {str(k).lower(): str(v) for k, v in dict(options).items() if v is not None}
        unknown = [k for k in self.raw if k not in self.KNOWN | self.SPARKS and not k.startswith("table.")]
        if unknown:
            raise ValueError(f"lakestream: unknown option(s) {sorted(unknown)}; see docs/spark.md")
        if "uri" not in self.raw:
            raise ValueError("lakestream: option 'uri' is required (grpc://host:port of a node)")

    def get(self, key, default=None):
        return self.raw.get(key.lower(), default)

    def client(self):
        return Client(self.raw["uri"], self.raw.get("username"), self.raw.get("password"))

    def table(self, required=True):
        t = self.raw.get("table") or self.raw.get("path")
        if not t and required:
            raise ValueError("lakestream: name the table: .load('db.t') / .save('db.t') or option 'table'")
        return t

    def table_options(self):
        """The table options of a created table: every option 'table.<name>'."""
        return {k[len("table."):]: v for k, v in self.raw.items() if k.startswith("table.")}

    def rows_per_call(self):
        n = int(self.raw.get("rowspercall", DEFAULT_ROWS_PER_CALL))
        if n < 1:
            raise ValueError("lakestream: rowsPerCall must be at least 1")
        return n


def spark_schema(arrow_schema):
    from pyspark.sql.pandas.types import from_arrow_schema
    return from_arrow_schema(arrow_schema, prefer_timestamp_ntz=True)


def table_arrow_schema(client, table):
    """The table's schema, as its scan returns it."""
    import pyarrow.flight as fl
    path = full_name(table).split(".")
    return client.flight().get_schema(fl.FlightDescriptor.for_path(*path), client.options()).schema


class LakestreamDataSource(DataSource):
    """format("lakestream"). Options: docs/spark.md."""

    @classmethod
    def name(cls):
        return "lakestream"

    def __init__(self, options):
        super().__init__(options)
        self.opts = Options(options)

    def schema(self):
        client = self.opts.client()
        try:
            q = self.opts.get("query")
            if q is not None:
                arrow, _ = client.plan(q)
                return spark_schema(arrow)
            return spark_schema(table_arrow_schema(client, self.opts.table()))
        finally:
            client.close()

    def reader(self, schema):
        from ._read import BatchReader, FilteringBatchReader
        if self.opts.get("pushFilters", "false").lower() == "true":
            return FilteringBatchReader(self.opts, schema)
        return BatchReader(self.opts, schema)

    def writer(self, schema, overwrite):
        from ._write import BatchWriter, prepare_table
        prepare_table(self.opts, schema, overwrite)
        return BatchWriter(self.opts, uuid.uuid4().hex)

    def streamReader(self, schema):
        from ._stream import StreamReader
        if self.opts.get("query") is not None:
            raise ValueError("lakestream: option 'query' is for batch reads; a stream reads a table")
        return StreamReader(self.opts, schema)

    def streamWriter(self, schema, overwrite):
        from ._write import StreamWriter, prepare_table
        prepare_table(self.opts, schema, overwrite)
        return StreamWriter(self.opts)


def select_columns(columns):
    return ", ".join(quote_ident(c) for c in columns)
