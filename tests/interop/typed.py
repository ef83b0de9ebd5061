"""The basic SQL types of docs/sql.md ("Types") as clients send them: for
each, the SQL type, the Arrow type a client binds, two values (lo < hi) and
the DuckDB Python value constructor that binds the same typed value in
DuckDB itself, the reference the client matrix compares against."""
import datetime as dt
from decimal import Decimal

import pyarrow as pa
from duckdb.value import constant as dv

UTC = dt.timezone.utc


class Basic:
    def __init__(self, name, sql, arrow, lo, hi, duck):
        self.name, self.sql, self.arrow, self.lo, self.hi = name, sql, arrow, lo, hi
        self._duck = duck

    def duck(self, v):
        """The DuckDB Python value of v, typed as this type."""
        return self._duck(v)

    def __repr__(self):
        return self.name


def _decimal(v):
    return dv.DecimalValue(v, 9, 2)


BASIC = [
    Basic("bool", "BOOLEAN", pa.bool_(), False, True, dv.BooleanValue),
    Basic("int8", "TINYINT", pa.int8(), -5, 9, dv.BinaryValue),
    Basic("int16", "SMALLINT", pa.int16(), -300, 300, dv.ShortValue),
    Basic("int32", "INTEGER", pa.int32(), -70_000, 70_000, dv.IntegerValue),
    Basic("int64", "BIGINT", pa.int64(), 9, 2**40, dv.LongValue),
    Basic("float", "FLOAT", pa.float32(), -1.5, 2.25, dv.FloatValue),
    Basic("double", "DOUBLE", pa.float64(), 0.125, 1e300, dv.DoubleValue),
    # Nine digits: DuckDB's Python DecimalValue types a value by its digits.
    Basic("decimal", "DECIMAL(9,2)", pa.decimal128(9, 2), Decimal("-1234567.89"), Decimal("1234567.89"), _decimal),
    Basic("varchar", "VARCHAR", pa.string(), "abc", "löschen", dv.StringValue),
    Basic("blob", "BLOB", pa.binary(), b"\x00\x01", b"\xff", dv.BlobValue),
    Basic("date", "DATE", pa.date32(), dt.date(1999, 12, 31), dt.date(2024, 2, 29), dv.DateValue),
    Basic("time", "TIME", pa.time64("us"), dt.time(0, 0, 1), dt.time(23, 59, 59, 999_999), dv.TimeValue),
    Basic("timestamp", "TIMESTAMP", pa.timestamp("us"), dt.datetime(1970, 1, 1, 0, 0, 0, 1),
          dt.datetime(2024, 2, 29, 12, 30, 0, 5), dv.TimestampValue),
    Basic("timestamptz", "TIMESTAMPTZ", pa.timestamp("us", tz="UTC"), dt.datetime(1970, 1, 1, tzinfo=UTC),
          dt.datetime(2024, 2, 29, 12, 30, 0, 5, tzinfo=UTC), dv.TimestampTimeZoneValue),
]


def params(*pairs):
    """A one-row record batch of typed parameters: pairs of (Basic, value)."""
    return pa.record_batch([pa.array([v], type=b.arrow) for b, v in pairs],
                           names=[str(i + 1) for i in range(len(pairs))])


def duck_params(*pairs):
    return [b.duck(v) for b, v in pairs]


def statements(b):
    """Statements over typed parameters of b, with their parameters."""
    out = [
        ("SELECT ? AS x", [(b, b.lo)]),
        ("SELECT ? < ? AS lt, ? = ? AS eq", [(b, b.lo), (b, b.hi), (b, b.hi), (b, b.hi)]),
        ("SELECT greatest(?, ?) AS g", [(b, b.lo), (b, b.hi)]),
        ("SELECT typeof(?) AS t", [(b, b.hi)]),
        ("SELECT [?, ?] AS l", [(b, b.lo), (b, b.hi)]),
        ("SELECT ? IS NULL AS n, coalesce(?, ?) AS c", [(b, b.lo), (b, b.hi), (b, b.lo)]),
    ]
    if b.name.startswith("int") or b.name in ("float", "double", "decimal"):
        out.append(("SELECT ? + 1 AS p", [(b, b.lo)]))
    return out
