"""Positions in a table's changelog and the reads built on them: resolving a
start ('earliest', 'latest', a timestamp, explicit offsets) to one offset
per bucket, reading a bounded range of one bucket (what a Spark
micro-batch reads), and subscribe(), an unbounded iterator that resumes
by itself. Offsets are per bucket, dense, from 0 (docs/sql.md,
"Changelog and subscriptions")."""
import datetime
import json
import time

import pyarrow.compute as pc
import pyarrow.flight as fl

from ._client import Client, full_name, quote_ident, quote_string, sql_literal

CHANGE_COLUMNS = ("_change_type", "_bucket", "_offset", "_commit_timestamp")

# Errors after which a subscription connects again: the node restarted or
# moved, the connection broke, or the stream was cut off (docs/flight.md,
# "Errors a client may retry").
RETRYABLE = (fl.FlightUnavailableError, fl.FlightTimedOutError, fl.FlightCancelledError, ConnectionError)


class Position(dict):
    """{bucket: offset of the next row} of a table: what a consumer saves
    to resume exactly. str() is the start changes() takes ('0:12,1:40')."""

    def __str__(self):
        return ",".join(f"{b}:{o}" for b, o in sorted(self.items()))

    def to_json(self):
        return json.dumps({str(b): o for b, o in sorted(self.items())})

    @classmethod
    def parse(cls, s):
        """'0:12,1:40' or '{"0": 12, "1": 40}'."""
        s = s.strip()
        if s.startswith("{"):
            return cls({int(b): int(o) for b, o in json.loads(s).items()})
        out = cls()
        for part in s.split(","):
            b, _, o = part.partition(":")
            if not _:
                raise ValueError(f"position {s!r}: want '<bucket>:<offset>,...' or a JSON object")
            out[int(b)] = int(o)
        return out


def changelog_name(table):
    db, name = full_name(table).split(".", 1)
    return f"{quote_ident(db)}.{quote_ident(name + '$changelog')}"


def parse_timestamp(v):
    """A start given as a timestamp: a datetime (naive is UTC) or an ISO
    string, as an aware datetime."""
    if isinstance(v, str):
        v = datetime.datetime.fromisoformat(v.strip())
    if v.tzinfo is None:
        v = v.replace(tzinfo=datetime.timezone.utc)
    return v


def resolve_start(client, table, start, offs=None):
    """start as a Position covering every bucket of table: 'earliest'
    (the first readable offset: 0 with a lake), 'latest' (the committed
    end), a datetime or 'timestamp:<ISO>' (the first row committed at or
    after it), or explicit offsets (a dict, '0:12,1:40' or JSON; buckets
    not named start at the earliest, as in changes()). offs, when given,
    are the table's offsets (a cluster's, from each bucket's leader)."""
    if offs is None:
        offs = client.offsets(table)
    if isinstance(start, datetime.datetime):
        return _at_time(client, table, offs, parse_timestamp(start))
    if isinstance(start, dict):
        given = Position({int(b): int(o) for b, o in start.items()})
    elif start == "earliest":
        return Position({b: e for b, (e, _, _) in offs.items()})
    elif start == "latest":
        return Position({b: end for b, (_, _, end) in offs.items()})
    elif isinstance(start, str) and start.startswith("timestamp:"):
        return _at_time(client, table, offs, parse_timestamp(start[len("timestamp:"):]))
    else:
        given = Position.parse(str(start))
    unknown = set(given) - set(offs)
    if unknown:
        raise ValueError(f"start {start!r}: table {table} has no bucket {sorted(unknown)} (it has {len(offs)})")
    return Position({b: given.get(b, e) for b, (e, _, _) in offs.items()})


def _at_time(client, table, offs, ts):
    """Each bucket's first offset committed at or after ts: found in the
    retained log, or — when the log's first row is already that recent
    and the lake holds older history — in the lake's history."""
    lit = sql_literal(ts)
    found = client.query(f"SELECT _bucket AS b, min(_offset) AS o FROM {changelog_name(table)} "
                         f"WHERE _commit_timestamp >= {lit} GROUP BY _bucket").to_pylist()
    first = {r["b"]: r["o"] for r in found}
    pos = Position()
    for b, (earliest, log_start, end) in offs.items():
        o = first.get(b, end)
        if o == log_start and earliest < log_start:
            o = _first_in_history(client, table, offs, b, lit, earliest, log_start)
        pos[b] = o
    return pos


def _first_in_history(client, table, offs, bucket, lit, earliest, log_start):
    """The first offset of bucket in [earliest, log_start] committed at or
    after the literal lit: one exists, the log's first row at worst."""
    start = Position({b: end for b, (_, _, end) in offs.items()})
    start[bucket] = earliest
    sql = (f"SELECT _offset FROM changes({quote_string(full_name(table))}, '{start}', 1) "
           f"WHERE _bucket = {bucket} AND _offset <= {log_start} AND _commit_timestamp >= {lit}")
    _, eps = client.plan(sql)
    reader = client.stream(eps[0])
    try:
        for chunk in reader:
            if chunk.data is not None and chunk.data.num_rows:
                return chunk.data.column(0)[0].as_py()
    finally:
        reader.cancel()
    return log_start


def select_list(columns):
    return ", ".join(quote_ident(c) for c in columns)


def read_range(client, table, columns, bucket, start, end, ends, where=None):
    """The rows of bucket with offsets in [start, end) as record batches of
    columns (which must hold _offset), read from the changelog (and the
    lake below the retained log) with changes(); ends are the committed
    ends of every bucket, where the others start so that they send
    nothing. Stops once offset end - 1 has been read."""
    if end <= start:
        return
    spec = Position(ends)
    spec[bucket] = start
    cond = f"_bucket = {bucket} AND _offset < {end}"
    if where:
        cond += f" AND {where}"
    sql = f"SELECT {select_list(columns)} FROM changes({quote_string(full_name(table))}, '{spec}', 1) WHERE {cond}"
    _, eps = client.plan(sql)
    reader = client.stream(eps[0])
    off = columns.index("_offset")
    try:
        for chunk in reader:
            b = chunk.data
            if b is None or not b.num_rows:
                continue
            yield b
            if pc.max(b.column(off)).as_py() >= end - 1:
                return
    finally:
        reader.cancel()


def subscribe(uri, table, start="latest", *, columns=None, where=None, username=None, password=None,
              retry_seconds=0.5, max_retry_seconds=10.0, max_failures=None):
    """Every change of table from start, as (pyarrow.RecordBatch,
    Position): each batch with the position after it, the point to resume
    from once the batch is processed. Runs until the caller stops
    iterating. After a lost connection, a node restart or a bucket's
    leader failing it connects again (waiting retry_seconds, doubling up
    to max_retry_seconds) and continues from the position after the last
    batch it yielded: no row is lost or repeated. max_failures (None: no
    limit) bounds the connection attempts in a row that fail.

    uri is one node, or several (a list, or comma-separated): in a
    cluster the subscription reads each bucket from the node its plan
    locates it at, and plans again on the next node it knows (those given
    and the members lakestream.nodes lists) when one fails
    (docs/flight.md, "Subscriptions across failover").

    columns: the table's columns to read (default: all) — _bucket and
    _offset are always added; where: a changes() filter (docs/sql.md)."""
    nodes = _node_list(uri)
    client = Client(nodes[0], username, password)
    nodes = _learn_nodes(client, nodes)
    offs = None
    if len(nodes) > 1:
        offs = _leader_offsets(nodes, table, username, password) or None
    pos = resolve_start(client, table, start, offs)
    failures, wait, turn = 0, retry_seconds, 0
    while True:
        try:
            if columns:
                cols = list(columns) + [c for c in ("_bucket", "_offset") if c not in columns]
                sel = select_list(cols)
            else:
                sel = "*"  # the table's columns and the changelog's, _bucket and _offset among them
            sql = f"SELECT {sel} FROM changes({quote_string(full_name(table))}, '{pos}', 1)"
            if where:
                sql += f" WHERE {where}"
            _, eps = client.plan(sql)
            failures, wait = 0, retry_seconds
            for b in _read_all(client, eps):
                _advance(pos, b)
                yield b, Position(pos)
            # The stream ended without an error (the node shut down
            # cleanly): connect again as after a failure.
            raise ConnectionError("subscription stream ended")
        except RETRYABLE:
            failures += 1
            if max_failures is not None and failures > max_failures:
                raise
            client.close()
            time.sleep(wait)  # back-off before connecting again
            wait = min(wait * 2, max_retry_seconds)
            turn += 1
            client = Client(nodes[turn % len(nodes)], username, password)


def _node_list(uri):
    if isinstance(uri, str):
        uri = uri.split(",")
    out = [u.strip() for u in uri if u and u.strip()]
    if not out:
        raise ValueError("subscribe: no node uri given")
    return out


def _learn_nodes(client, nodes):
    """nodes and the Flight addresses of the cluster's members that
    client's node lists (none on a single node)."""
    try:
        rows = client.query("SELECT flight_addr FROM lakestream.nodes WHERE node_id IS NOT NULL").to_pylist()
    except fl.FlightError:
        return nodes
    scheme = nodes[0].split("://", 1)[0] if "://" in nodes[0] else "grpc"
    known = list(nodes)
    for r in rows:
        addr = r["flight_addr"]
        if addr and not any(n.endswith("//" + addr) or n == addr for n in known):
            known.append(f"{scheme}://{addr}")
    return known


def _leader_offsets(nodes, table, username, password):
    """{bucket: (earliest, log start, end)} of table in a cluster, each
    bucket's as its leader holds them (a node holding no replica of a
    bucket lists it empty); buckets whose leader no node answered for are
    left out, and {} when none is found."""
    name = quote_string(full_name(table))
    out, every = {}, set()
    for uri in nodes:
        c = Client(uri, username, password)
        try:
            rows = c.query(f"SELECT bucket, local_role = 'leader' AS led FROM lakestream.buckets "
                           f"WHERE lower(table_name) = lower({name})").to_pylist()
            every.update(r["bucket"] for r in rows)
            led = {r["bucket"] for r in rows if r["led"]}
            if led:
                out.update({b: v for b, v in c.offsets(table).items() if b in led})
        except (fl.FlightError, LookupError):
            continue  # a node down or without the table: the others answer
        finally:
            c.close()
    if set(out) != every:
        return {}  # a bucket without a known leader: resolve on one node instead
    return out


def _read_all(client, eps):
    """The batches of every endpoint of a subscription as they come: one
    endpoint is read here, several (a cluster's nodes each serving some
    buckets) by a thread each. The first error of any ends them all and
    is raised."""
    if len(eps) == 1:
        reader = client.stream(eps[0])
        try:
            for chunk in reader:
                if chunk.data is not None and chunk.data.num_rows:
                    yield chunk.data
        finally:
            reader.cancel()
        return
    import queue
    import threading
    q = queue.Queue(maxsize=2 * len(eps))
    stop = threading.Event()
    readers = []

    def put(item):
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return
            except queue.Full:
                continue  # the consumer is slow: wait for room, or for the stop

    def run(ep):
        try:
            reader = client.stream(ep)
            readers.append(reader)
            if stop.is_set():
                # The consumer stopped before it could see this reader:
                # cancel it here, or the thread waits for a next batch.
                reader.cancel()
                return
            for chunk in reader:
                if stop.is_set():
                    return
                if chunk.data is not None and chunk.data.num_rows:
                    put(("batch", chunk.data))
            put(("end", None))
        except Exception as e:  # handed to the consumer, which raises it
            put(("error", e))

    threads = [threading.Thread(target=run, args=(ep,), daemon=True) for ep in eps]
    for t in threads:
        t.start()
    try:
        while True:
            kind, v = q.get()
            if kind == "batch":
                yield v
            elif kind == "error":
                raise v
            else:
                raise ConnectionError("subscription stream ended")
    finally:
        stop.set()
        for r in list(readers):
            try:
                r.cancel()
            except Exception:
                pass
        for t in threads:
            t.join(timeout=5)


def _advance(pos, batch):
    import numpy as np
    buckets = batch.column("_bucket").to_numpy()
    offsets = batch.column("_offset").to_numpy()
    for b in np.unique(buckets):
        o = int(offsets[buckets == b].max()) + 1
        if o > pos.get(int(b), 0):
            pos[int(b)] = o
