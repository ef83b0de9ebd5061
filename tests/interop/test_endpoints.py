"""Split, self-contained query plans as a distributed reader uses them
(docs/flight.md, "Split queries"): GetFlightInfo of a filtered projection of
a table split between lake and log returns several endpoints; each, read on
a connection of its own after more rows were written, gives part of the
answer, and together they are the ADBC answer at planning; an altered or
expired ticket is refused with a clear error."""
import time

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from conftest import Server
from util import gen_rows, ingest, query

SQL = "SELECT id, amount * 2 AS twice, kind FROM sp WHERE kind IN ('buy', 'ship') AND amount > 100"


def _pb_bytes(field, data):
    """A length-delimited protobuf field (enough to build a Flight SQL command by hand)."""
    n, out = len(data), bytearray([field << 3 | 2])
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out) + data


def plan(uri, sql):
    """GetFlightInfo of a Flight SQL statement, on a connection closed after."""
    cmd = _pb_bytes(1, sql.encode())
    any_cmd = _pb_bytes(1, b"type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery") + _pb_bytes(2, cmd)
    client = fl.FlightClient(uri)
    try:
        return client.get_flight_info(fl.FlightDescriptor.for_command(any_cmd))
    finally:
        client.close()


def read_on_new_connection(uri, ticket):
    client = fl.FlightClient(uri)
    try:
        return client.do_get(ticket).read_all()
    finally:
        client.close()


def wait_tiered(conn, table, rows, server, timeout=60):
    """Waits until the lake holds `rows` rows of table (tiered offsets are row offsets)."""
    deadline = time.monotonic() + timeout
    st = []
    while time.monotonic() < deadline:
        st = [r for r in query(conn, "SELECT * FROM lakestream.tiering").to_pylist() if r["table_name"] == f"default.{table}"]
        if st and sum(r["tiered_offset"] for r in st) == rows:
            return
        time.sleep(0.2)  # polling the tiering state: there is no event to wait on
    pytest.fail(f"{table}: lake did not reach {rows} rows in {timeout} s: {st}\n{server.tail(30)}")


def by_id(t):
    return t.sort_by("id").to_pylist()


def test_split_endpoints_read_on_new_connections(server, conn):
    query(conn, "CREATE TABLE sp (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ) "
                "WITH ('bucket.num'='4', 'bucket.key'='id', 'datalake.freshness'='1s')")
    ingest(conn, "sp", gen_rows(0, 20_000))
    wait_tiered(conn, "sp", 20_000, server)
    ingest(conn, "sp", gen_rows(20_000, 5_000))  # the log tail above the lake

    info = plan(server.uri, SQL)
    expected = query(conn, SQL)  # nothing written in between: the same capture
    assert all(ep.expiration_time is not None for ep in info.endpoints)
    assert len(info.endpoints) > 4, "want an endpoint per bucket of the log tail and per group of lake files"
    assert any(b'"files"' in ep.ticket.ticket for ep in info.endpoints), "no endpoint reads lake files"
    assert any(b'"ranges"' in ep.ticket.ticket for ep in info.endpoints), "no endpoint reads the log"
    ingest(conn, "sp", gen_rows(25_000, 3_000))  # written after planning: in no endpoint

    parts = [read_on_new_connection(server.uri, ep.ticket) for ep in info.endpoints]
    assert sum(1 for p in parts if p.num_rows) > 1, "the rows are not spread over the endpoints"
    got = pa.concat_tables(parts)
    assert got.schema.names == ["id", "twice", "kind"]
    assert got.num_rows == expected.num_rows > 0
    assert by_id(got) == by_id(expected)
    # Planned again, the statement sees the later rows.
    again = plan(server.uri, SQL)
    assert sum(read_on_new_connection(server.uri, ep.ticket).num_rows for ep in again.endpoints) > expected.num_rows

    # An aggregate is one endpoint.
    assert len(plan(server.uri, "SELECT kind, count(*) FROM sp GROUP BY kind").endpoints) == 1

    # A ticket altered after signing is refused, as permission denied, not as an internal error.
    raw = info.endpoints[0].ticket.ticket
    at = raw.index(b'"sql"')
    tampered = raw[:at] + raw[at:].replace(b"100", b"999", 1)  # in "amount > 100" (JSON writes > as \u003e)
    assert tampered != raw
    with pytest.raises(fl.FlightUnauthorizedError, match="altered"):
        read_on_new_connection(server.uri, fl.Ticket(tampered))


def test_expired_ticket_is_refused(tmp_path):
    server = Server(tmp_path / "data", tmp_path / "server.log").start("--ticket-ttl", "1s")
    try:
        import adbc_driver_flightsql.dbapi as flightsql
        conn = flightsql.connect(server.uri, autocommit=True)
        try:
            query(conn, "CREATE TABLE ex (id BIGINT NOT NULL, v DOUBLE) WITH ('bucket.num'='2', 'bucket.key'='id')")
            ingest(conn, "ex", pa.table({"id": pa.array(range(100), pa.int64()), "v": pa.array([1.5] * 100)}))
        finally:
            conn.close()
        info = plan(server.uri, "SELECT id FROM ex WHERE v > 1")
        assert len(info.endpoints) == 2
        deadline = time.monotonic() + 10
        while True:  # the ticket is good for 1 s (in whole seconds): read until it is refused
            try:
                read_on_new_connection(server.uri, info.endpoints[0].ticket)
            except (fl.FlightError, pa.ArrowException) as e:  # pyarrow raises FAILED_PRECONDITION as ArrowInvalid
                assert not isinstance(e, fl.FlightInternalError), e
                assert "precondition" in str(e).lower(), e
                assert "expired" in str(e) and "plan the query again" in str(e), e
                break
            assert time.monotonic() < deadline, "the ticket did not expire"
            time.sleep(0.2)  # waiting for the clock: there is no event to wait on
    finally:
        server.stop()
