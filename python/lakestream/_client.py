"""The wire side of the package: Flight SQL planning and endpoint reads over
pyarrow.flight, idempotent writes (docs/flight.md, "Idempotent writes"),
DDL and small queries over ADBC, and the per-bucket offsets of
lakestream.offsets (docs/sql.md, "Changelog and subscriptions").

Everything here is picklable by what it is built from (a uri and
credentials), so a Spark task can rebuild it on an executor."""
import datetime
import decimal
import re

import pyarrow as pa
import pyarrow.flight as fl

WRITER_ID = b"lakestream-writer-id"
WRITER_SEQ = b"lakestream-writer-seq"
_ADBC_HEADER = "adbc.flight.sql.rpc.call_header."

# "writer 42: sequence 5: out of order writer sequence: expected 3 (the
# next call) or 2 (a retry of the last one acknowledged)"
_OUT_OF_ORDER = re.compile(r"expected (\d+) \(the next call\)")


def _pb_bytes(field, data):
    """A length-delimited protobuf field."""
    n, out = len(data), bytearray()
    out.append(field << 3 | 2)
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out) + data


def statement_query(sql):
    """A Flight SQL CommandStatementQuery wrapped in google.protobuf.Any:
    the descriptor command of a query, as every Flight SQL client sends it."""
    cmd = _pb_bytes(1, sql.encode())
    return _pb_bytes(1, b"type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery") + _pb_bytes(2, cmd)


def quote_ident(name):
    return '"' + name.replace('"', '""') + '"'


def quote_string(s):
    return "'" + s.replace("'", "''") + "'"


def sql_literal(v):
    """v as a SQL literal DuckDB and changes() filters read back as the same
    value, or None when it has no such form here."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return None
        return repr(v)
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, str):
        return quote_string(v)
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            return "TIMESTAMPTZ " + quote_string(v.astimezone(datetime.timezone.utc).isoformat(sep=" "))
        return "TIMESTAMP " + quote_string(v.isoformat(sep=" "))
    if isinstance(v, datetime.date):
        return "DATE " + quote_string(v.isoformat())
    return None


def full_name(table):
    """db.name of a table name as written (t, db.t, "Quoted"): what
    lakestream.offsets lists."""
    parts = [p.strip() for p in table.split(".")]
    if len(parts) == 1:
        parts = ["default"] + parts
    out = []
    for p in parts:
        out.append(p[1:-1].replace('""', '"') if p.startswith('"') and p.endswith('"') else p.lower())
    return ".".join(out)


class Endpoint:
    """One endpoint of a planned result: its ticket and the locations it
    may be read from (none: the node that planned it)."""

    def __init__(self, ticket, locations):
        self.ticket = ticket
        self.locations = locations

    def __reduce__(self):
        return (Endpoint, (self.ticket, self.locations))


class Client:
    """A connection to one node. uri is grpc://host:port (grpc+tls:// for
    TLS); username and password log in with Flight's basic token
    exchange when given."""

    def __init__(self, uri, username=None, password=None):
        self.uri = uri
        self.username = username
        self.password = password
        self._flight = {}
        self._headers = []

    def __reduce__(self):
        return (Client, (self.uri, self.username, self.password))

    # ---------------------------------------------------------------- Flight

    def flight(self, location=None):
        """The pyarrow.flight client of location (default: uri), logged in."""
        loc = location or self.uri
        c = self._flight.get(loc)
        if c is None:
            c = fl.FlightClient(loc)
            if self.username is not None:
                pair = c.authenticate_basic_token(self.username, self.password or "")
                self._headers = [pair]
            self._flight[loc] = c
        return c

    def options(self, headers=()):
        return fl.FlightCallOptions(headers=list(self._headers) + list(headers))

    def plan(self, sql):
        """Plans sql: its schema and its endpoints."""
        info = self.flight().get_flight_info(fl.FlightDescriptor.for_command(statement_query(sql)), self.options())
        eps = []
        for ep in info.endpoints:
            locs = [loc.uri.decode() if isinstance(loc.uri, bytes) else str(loc.uri) for loc in ep.locations]
            eps.append(Endpoint(ep.ticket.ticket, locs))
        return info.schema, eps

    def stream(self, ep):
        """The reader of one endpoint, from its first location that answers
        (or this node when it has none). Locations the client cannot use
        itself (Flight's "reuse this connection" marker) mean this node."""
        last = None
        for loc in ep.locations or [None]:
            if loc is not None and loc.startswith("arrow-flight-reuse-connection:"):
                loc = None
            try:
                return self.flight(loc).do_get(fl.Ticket(ep.ticket), self.options())
            except fl.FlightUnavailableError as e:
                last = e
        raise last

    def read_endpoint(self, ep):
        """Every record batch of one endpoint."""
        reader = self.stream(ep)
        for chunk in reader:
            if chunk.data is not None and chunk.data.num_rows:
                yield chunk.data

    def query(self, sql):
        """The whole result of sql as a pyarrow.Table."""
        schema, eps = self.plan(sql)
        batches = [b for ep in eps for b in self.read_endpoint(ep)]
        return pa.Table.from_batches(batches, schema=schema)

    def put(self, table, data, writer=None, seq=None):
        """Appends data (a Table or a list of RecordBatches) to table with
        one DoPut: one write, stored once for a given (writer, seq)."""
        headers = []
        if writer is not None:
            headers = [(WRITER_ID, str(writer).encode()), (WRITER_SEQ, str(seq).encode())]
        if isinstance(data, pa.Table):
            schema, batches = data.schema, data.to_batches()
        else:
            schema, batches = data[0].schema, data
        path = [p for p in full_name(table).split(".")]
        w, r = self.flight().do_put(fl.FlightDescriptor.for_path(*path), schema, self.options(headers))
        for b in batches:
            w.write_batch(b)
        w.done_writing()
        meta = r.read()
        w.close()
        return int(meta.to_pybytes()) if meta is not None else 0

    # ---------------------------------------------------------------- ADBC

    def execute(self, sql):
        """Runs a statement (DDL, DML) over ADBC."""
        import adbc_driver_flightsql.dbapi as flightsql
        kw = {}
        if self.username is not None:
            kw["db_kwargs"] = {"username": self.username, "password": self.password or ""}
        with flightsql.connect(self.uri, autocommit=True, **kw) as conn:
            with conn.cursor() as cur:
                cur.execute(sql)
                if cur.description:
                    return cur.fetch_arrow_table()
                return None

    # ---------------------------------------------------------------- offsets

    def offsets(self, table):
        """{bucket: (earliest, log start, end)} of table: end is the
        committed end, the offset of the next row."""
        t = self.query("SELECT bucket, earliest_offset, log_start_offset, end_offset FROM lakestream.offsets "
                       f"WHERE lower(table_name) = lower({quote_string(full_name(table))})")
        rows = t.to_pylist()
        if not rows:
            raise LookupError(f"table {table!r}: not found in lakestream.offsets (no such table on {self.uri})")
        return {r["bucket"]: (r["earliest_offset"], r["log_start_offset"], r["end_offset"]) for r in rows}

    def close(self):
        for c in self._flight.values():
            c.close()
        self._flight.clear()


class IdempotentWriter:
    """Writes a stream of record batches to a table as calls of about
    rows_per_call rows, call i with (writer, i): sent again — a Spark task
    retried, a micro-batch run again after a restart — the same rows in
    the same order make the same calls, and the table stores each once.
    A call that an earlier attempt stored is refused as out of order with
    the next number expected, and skipped."""

    def __init__(self, client, table, writer, rows_per_call):
        if writer == 0:
            raise ValueError("writer id must be non-zero")
        self.client, self.table, self.writer = client, table, writer
        self.rows_per_call = rows_per_call
        self.seq = 0
        self.pending, self.pending_rows = [], 0
        self.rows = 0  # rows of the calls this writer made or found stored

    def write(self, batch):
        while batch.num_rows:
            room = self.rows_per_call - self.pending_rows
            part, batch = batch.slice(0, room), batch.slice(room)
            self.pending.append(part)
            self.pending_rows += part.num_rows
            if self.pending_rows >= self.rows_per_call:
                self.flush()

    def flush(self):
        if not self.pending_rows:
            return
        batches, n = self.pending, self.pending_rows
        self.pending, self.pending_rows = [], 0
        try:
            self.client.put(self.table, batches, self.writer, self.seq)
        except pa.ArrowException as e:  # FAILED_PRECONDITION comes as ArrowInvalid
            m = _OUT_OF_ORDER.search(str(e))
            if not m or int(m.group(1)) <= self.seq:
                raise
            # An earlier attempt stored this call (and those up to
            # expected - 1): nothing to send.
        self.seq += 1
        self.rows += n

    def close(self):
        self.flush()
        return self.rows


def writer_id(*parts):
    """A non-zero int63 writer id derived from parts (strings and ints):
    the same parts give the same id on any machine."""
    import hashlib
    h = hashlib.sha256("\x00".join(str(p) for p in parts).encode()).digest()
    v = int.from_bytes(h[:8], "big") & (2**63 - 1)
    return v or 1
