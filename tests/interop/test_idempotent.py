"""Idempotent writes (docs/flight.md, "Idempotent writes"): a call that
carries the writer headers is stored once however often it is sent, from
ADBC (the Flight SQL driver's call-header options) and pyarrow.flight
(FlightCallOptions headers); a call out of sequence is refused with the
sequence expected; the state survives a restart."""
import random

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from util import gen_rows, ingest, query

HEADER = "adbc.flight.sql.rpc.call_header."
EVENTS = ("CREATE TABLE events (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ) "
          "WITH ('bucket.num' = '4')")  # no bucket key: a call's batches go round-robin


def writer_options(writer, seq):
    return {HEADER + "lakestream-writer-id": str(writer), HEADER + "lakestream-writer-seq": str(seq)}


def set_writer(obj, writer, seq):
    """Sets the headers on an ADBC statement or connection. The driver adds
    a value to those a header has; an empty one removes them, so the old
    values go first (else the call carries both, and is refused)."""
    obj.set_options(**{k: "" for k in writer_options(writer, seq)})
    obj.set_options(**writer_options(writer, seq))


def ingest_as(conn, table, data, writer, seq):
    """ADBC bulk ingest (append) as call seq of writer."""
    cur = conn.cursor()
    try:
        cur.adbc_statement.set_options(**writer_options(writer, seq))
        return cur.adbc_ingest(table, data, mode="append")
    finally:
        cur.close()


def count(conn, table):
    return query(conn, f"SELECT count(*) AS n FROM {table}").column("n")[0].as_py()


def ids(conn, table):
    return sorted(query(conn, f"SELECT id FROM {table}").column("id").to_pylist())


def test_adbc_ingest_retry_stored_once(server, conn):
    query(conn, EVENTS)
    writer = random.randrange(1, 2**63)
    a, b = gen_rows(0, 3000), gen_rows(3000, 500)
    # Several record batches: the retry splits them over the buckets anew.
    assert ingest_as(conn, "events", a, writer, 0) == 3000
    assert ingest_as(conn, "events", a, writer, 0) == 3000  # a retry: acknowledged, nothing stored
    assert count(conn, "events") == 3000
    with pytest.raises(Exception, match=r"expected 1 \(the next call\) or 0"):
        ingest_as(conn, "events", b, writer, 2)
    assert ingest_as(conn, "events", b, writer, 1) == 500
    assert ids(conn, "events") == list(range(3500))

    # The state survives a restart: a retry of the last call is still one.
    conn.close()
    server.stop()
    server.start()
    import adbc_driver_flightsql.dbapi as flightsql
    with flightsql.connect(server.uri, autocommit=True) as c2:
        assert ingest_as(c2, "events", b, writer, 1) == 500
        assert count(c2, "events") == 3500
        with pytest.raises(Exception, match=r"FAILED_PRECONDITION|expected 2"):
            ingest_as(c2, "events", a, writer, 0)
        # Without the headers a call is stored each time.
        assert ingest(c2, "events", gen_rows(3500, 10)) == 10
        assert count(c2, "events") == 3510


def test_adbc_insert_with_connection_headers(server, conn):
    query(conn, EVENTS)
    for seq, repeat in [(0, 2), (1, 3)]:
        set_writer(conn.adbc_connection, 77, seq)
        for _ in range(repeat):
            cur = conn.cursor()
            cur.execute(f"INSERT INTO events SELECT i, 1.0, 'x', NULL FROM range({seq * 10}, {seq * 10 + 10}) t(i)")
            assert cur.rowcount == 10
            cur.close()
    assert ids(conn, "events") == list(range(20))


def test_adbc_bad_headers_refused(server, conn):
    query(conn, EVENTS)
    cur = conn.cursor()
    try:
        cur.adbc_statement.set_options(**{HEADER + "lakestream-writer-id": "5"})
        with pytest.raises(Exception, match="go together"):
            cur.adbc_ingest("events", gen_rows(0, 5), mode="append")
    finally:
        cur.close()
    assert count(conn, "events") == 0


def test_pyarrow_flight_doput_retry(server, conn):
    query(conn, EVENTS)
    client = fl.FlightClient(f"grpc://127.0.0.1:{server.port}")

    def put(data, seq):
        opts = fl.FlightCallOptions(headers=[(b"lakestream-writer-id", b"424242"),
                                             (b"lakestream-writer-seq", str(seq).encode())])
        writer, reader = client.do_put(fl.FlightDescriptor.for_path("events"), data.schema, options=opts)
        writer.write_table(data, max_chunksize=400)
        writer.done_writing()
        meta = reader.read()
        writer.close()  # raises the call's error
        return int(meta.to_pybytes())

    data = gen_rows(0, 1000)
    assert put(data, 0) == 1000
    assert put(data, 0) == 1000
    assert put(gen_rows(1000, 10), 1) == 10
    with pytest.raises(Exception, match=r"precondition failed.*expected 2 \(the next call\)"):
        put(gen_rows(2000, 10), 5)
    assert ids(conn, "events") == list(range(1010))


def test_primary_key_retry_changes_nothing(server, conn):
    query(conn, "CREATE TABLE acc (id BIGINT, total BIGINT, PRIMARY KEY (id)) "
                "WITH ('merge-engine' = 'aggregation', 'fields.total.agg' = 'sum')")
    rows = pa.table({"id": pa.array([1, 2], pa.int64()), "total": pa.array([5, 7], pa.int64())})
    for _ in range(3):
        assert ingest_as(conn, "acc", rows, 9, 0) == 2
    got = query(conn, "SELECT id, total FROM acc ORDER BY id").to_pylist()
    assert got == [{"id": 1, "total": 5}, {"id": 2, "total": 7}]
    assert query(conn, "SELECT total FROM acc WHERE id = 2").column("total").to_pylist() == [7]
