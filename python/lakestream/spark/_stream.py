"""Streaming reads. An offset is the table's position: {"<bucket>": offset
of the next row}, JSON in Spark's checkpoint. latestOffset is each
bucket's committed end (lakestream.offsets, read without touching data);
a micro-batch reads, per bucket that moved, the range [start, end) of
the changelog with changes() — below the retained log the node reads it
from the lake. The same range gives the same rows, in the same order, on
every run: a micro-batch replayed after a restart is the one that ran."""
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from .._subscribe import CHANGE_COLUMNS, Position, read_range, resolve_start


class RangePartition(InputPartition):
    """Offsets [start, end) of one bucket; ends are every bucket's end of
    the micro-batch."""

    def __init__(self, bucket, start, end, ends):
        super().__init__((bucket, start, end))
        self.bucket, self.start, self.end, self.ends = bucket, start, end, dict(ends)


def _position(offset):
    return Position({int(b): int(o) for b, o in offset.items()})


class StreamReader(DataSourceStreamReader):
    def __init__(self, opts, schema):
        self.opts = opts
        self.table = opts.table()
        self.columns = schema.fieldNames()
        # _offset bounds each range: read even when not asked for.
        self.read_columns = self.columns + ([] if "_offset" in self.columns else ["_offset"])
        self.start = opts.get("startingOffsets", "latest")

    def _client(self):
        return self.opts.client()

    def initialOffset(self):
        client = self._client()
        try:
            start = self.start
            if start not in ("earliest", "latest") and not start.startswith("timestamp:"):
                start = Position.parse(start)
            return {str(b): o for b, o in resolve_start(client, self.table, start).items()}
        finally:
            client.close()

    def latestOffset(self):
        client = self._client()
        try:
            return {str(b): end for b, (_, _, end) in sorted(client.offsets(self.table).items())}
        finally:
            client.close()

    def partitions(self, start, end):
        s, e = _position(start), _position(end)
        return [RangePartition(b, s.get(b, 0), e[b], e) for b in sorted(e) if e[b] > s.get(b, 0)]

    def read(self, partition):
        client = self._client()
        try:
            drop = "_offset" not in self.columns
            for b in read_range(client, self.table, self.read_columns, partition.bucket, partition.start,
                                partition.end, partition.ends):
                yield b.select(self.columns) if drop else b
        finally:
            client.close()

    def commit(self, end):
        # Nothing to release: the node keeps no state per reader.
        pass


__all__ = ["StreamReader", "CHANGE_COLUMNS"]
