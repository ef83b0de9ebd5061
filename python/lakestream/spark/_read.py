"""Batch reads: one Spark partition per Flight endpoint of the planned
scan, each read from its location (or the planning node), yielding the
endpoint's record batches as they come (the direct Arrow path)."""
from pyspark.sql.datasource import (DataSourceReader, EqualNullSafe, EqualTo, GreaterThan, GreaterThanOrEqual, In,
                                    InputPartition, IsNotNull, IsNull, LessThan, LessThanOrEqual, Not,
                                    StringContains, StringEndsWith, StringStartsWith)

from .._client import quote_ident, quote_string, sql_literal
from ._source import select_columns

_COMPARE = {EqualTo: "=", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<", LessThanOrEqual: "<=",
            EqualNullSafe: "IS NOT DISTINCT FROM"}
_STRING = {StringStartsWith: "starts_with", StringEndsWith: "ends_with", StringContains: "contains"}


def filter_sql(f):
    """f as a SQL condition that means what Spark means by it, or None when
    it has none here (Spark then evaluates it itself)."""
    attr = getattr(f, "attribute", None)
    if attr is not None:
        if len(attr) != 1:
            return None  # a nested field
        col = quote_ident(attr[0])
    if type(f) in _COMPARE:
        lit = sql_literal(f.value)
        return None if lit is None or f.value is None else f"{col} {_COMPARE[type(f)]} {lit}"
    if isinstance(f, In):
        lits = [sql_literal(v) for v in f.value if v is not None]
        if not lits or None in lits:
            return None
        return f"{col} IN ({', '.join(lits)})"
    if isinstance(f, IsNull):
        return f"{col} IS NULL"
    if isinstance(f, IsNotNull):
        return f"{col} IS NOT NULL"
    if type(f) in _STRING:
        return f"{_STRING[type(f)]}({col}, {quote_string(f.value)})"
    if isinstance(f, Not):
        inner = filter_sql(f.child)
        return None if inner is None else f"NOT ({inner})"
    return None


class EndpointPartition(InputPartition):
    """One endpoint: its ticket and locations."""

    def __init__(self, ticket, locations):
        super().__init__((ticket, tuple(locations)))
        self.ticket, self.locations = ticket, list(locations)


class BatchReader(DataSourceReader):
    def __init__(self, opts, schema):
        self.opts = opts
        self.columns = schema.fieldNames()
        self.where = []

    def sql(self):
        q = self.opts.get("query")
        if q is not None:
            return q
        sql = f"SELECT {select_columns(self.columns)} FROM {self.opts.table()}"
        if self.where:
            sql += " WHERE " + " AND ".join(f"({c})" for c in self.where)
        return sql

    def partitions(self):
        client = self.opts.client()
        try:
            _, eps = client.plan(self.sql())
        finally:
            client.close()
        return [EndpointPartition(ep.ticket, ep.locations) for ep in eps]

    def read(self, partition):
        if partition is None:  # no endpoint: Spark asks for one empty partition
            return
        from .._client import Endpoint
        client = self.opts.client()
        try:
            names = self.columns
            for batch in client.read_endpoint(Endpoint(partition.ticket, partition.locations)):
                if batch.schema.names != names and self.opts.get("query") is None:
                    batch = batch.select(names)
                yield batch
        finally:
            client.close()


class FilteringBatchReader(BatchReader):
    """A BatchReader that takes Spark's filters. A separate class: Spark
    refuses a reader that implements pushFilters while
    spark.sql.python.filterPushdown.enabled is false (its default), so the
    source offers it only when asked (option pushFilters = true)."""

    def pushFilters(self, filters):
        """Turns the filters it can into the scan's WHERE (not over a
        'query': its text is sent as written) and returns the others."""
        for f in filters:
            cond = None if self.opts.get("query") is not None else filter_sql(f)
            if cond is None:
                yield f
            else:
                self.where.append(cond)
