"""changes(): a subscriber over ADBC and pyarrow.flight sees every row as it
commits, resumes exactly from saved offsets, and is refused what an
unbounded stream cannot do."""
import queue
import threading
import time

import adbc_driver_flightsql.dbapi as flightsql
import pyarrow as pa
import pyarrow.flight as fl
import pytest

from util import ingest, query


def rows(i, n=500):
    return pa.table({"id": pa.array(range(i * n, (i + 1) * n), pa.int64()), "batch": pa.array([i] * n, pa.int64())})


def subscribe(uri, sql, out, ready):
    """Reads a changes() stream in a thread (ADBC releases the GIL while it waits)."""
    conn = flightsql.connect(uri, autocommit=True)
    cur = conn.cursor()
    cur.execute(sql)
    reader = cur.fetch_record_batch()
    ready.set()
    try:
        for b in reader:
            if b.num_rows:
                out.put((time.perf_counter(), b.to_pylist()))
    except Exception as e:  # the stream ends when the test closes the connection
        out.put((None, e))


def collect(out, n, timeout=30):
    got, deadline = [], time.monotonic() + timeout
    while len(got) < n:
        _, batch = out.get(timeout=max(0.1, deadline - time.monotonic()))
        if isinstance(batch, Exception):
            raise batch
        got += batch
    return got


def test_subscribe_latency_and_exact_resume(server, conn):
    query(conn, "CREATE TABLE s (id BIGINT NOT NULL, batch BIGINT) WITH ('bucket.num'='2', 'bucket.key'='id')")
    ingest(conn, "s", rows(999))  # before the subscription: not part of 'latest'
    out, ready = queue.Queue(), threading.Event()
    threading.Thread(target=subscribe, daemon=True,
                     args=(server.uri, "SELECT id, batch, _bucket, _offset FROM changes('s', 'latest')", out, ready)).start()
    assert ready.wait(30)
    acked, lat = {}, []
    for i in range(40):
        ingest(conn, "s", rows(i))
        acked[i] = time.perf_counter()
        time.sleep(0.01)  # ~50k rows/s offered, as a producer would
    got = collect(out, 40 * 500)
    assert sorted(r["id"] for r in got) == list(range(40 * 500))
    last = {}
    for r in got:
        last[r["_bucket"]] = max(last.get(r["_bucket"], -1), r["_offset"])
    # Resume from (bucket, last offset + 1): exactly the rows written since.
    for i in range(40, 45):
        ingest(conn, "s", rows(i))
    pos = ",".join(f"{b}:{o + 1}" for b, o in sorted(last.items()))
    out2, ready2 = queue.Queue(), threading.Event()
    threading.Thread(target=subscribe, daemon=True,
                     args=(server.uri, f"SELECT id, _bucket, _offset FROM changes('s', '{pos}')", out2, ready2)).start()
    assert ready2.wait(30)
    again = collect(out2, 5 * 500)
    assert sorted(r["id"] for r in again) == list(range(40 * 500, 45 * 500))
    time.sleep(0.2)
    assert out2.empty(), "resumed subscription delivered more than the new rows"


def _pb_bytes(field, data):
    """A length-delimited protobuf field (enough to build a Flight SQL command by hand)."""
    n, out = len(data), bytearray([field << 3 | 2])
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out) + data


def flight_sql_query(sql):
    """CommandStatementQuery wrapped in google.protobuf.Any, as Flight SQL sends it."""
    cmd = _pb_bytes(1, sql.encode())
    return _pb_bytes(1, b"type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery") + _pb_bytes(2, cmd)


def test_earliest_over_pyarrow_flight_endpoints(server, conn):
    query(conn, "CREATE TABLE e (id BIGINT NOT NULL, batch BIGINT) WITH ('bucket.num'='4', 'bucket.key'='id')")
    ingest(conn, "e", rows(0))
    client = fl.FlightClient(f"grpc://127.0.0.1:{server.port}")
    info = client.get_flight_info(fl.FlightDescriptor.for_command(
        flight_sql_query("SELECT id, _bucket FROM changes('e', 'earliest', 2)")))
    assert len(info.endpoints) == 2  # each an unbounded stream of two buckets
    out = queue.Queue()

    def read(ep):
        try:
            for chunk in client.do_get(ep.ticket):
                if chunk.data.num_rows:
                    out.put((time.perf_counter(), chunk.data.to_pylist()))
        except fl.FlightError:
            pass  # the server ends subscriptions when the test stops it

    for ep in info.endpoints:
        threading.Thread(target=read, args=(ep,), daemon=True).start()
    ingest(conn, "e", rows(1))
    got = collect(out, 1000)
    assert sorted(r["id"] for r in got) == list(range(1000))
    assert {r["_bucket"] for r in got} == {0, 1, 2, 3}
    client.close()


@pytest.mark.parametrize("sql,words", [
    ("SELECT count(*) FROM changes('r', 'latest')", "unbounded"),
    ("SELECT * FROM changes('r', 'latest') ORDER BY id", "unbounded"),
    ("SELECT * FROM changes('r', 'next week')", "earliest"),
    ("SELECT * FROM changes('r', '9:0')", "bucket 9"),
    ("SELECT * FROM changes('nope', 'latest')", "nope"),
])
def test_refusals(conn, sql, words):
    query(conn, "CREATE TABLE IF NOT EXISTS r (id BIGINT)")
    with pytest.raises(Exception) as e:
        query(conn, sql)
    assert words in str(e.value)


def test_where_filters_the_stream(server, conn):
    """A filter on columns that are not selected returns exactly the matching
    rows, with the offsets of the unfiltered stream."""
    from util import gen_rows
    query(conn, "CREATE TABLE w (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ) "
                "WITH ('bucket.num'='2', 'bucket.key'='id')")
    data = gen_rows(0, 2000)
    ingest(conn, "w", data)
    want = sorted(r["id"] for r in data.to_pylist() if r["kind"] == "buy" and r["amount"] > 10)
    out, ready = queue.Queue(), threading.Event()
    threading.Thread(target=subscribe, daemon=True, args=(
        server.uri, "SELECT id, _bucket, _offset FROM changes('w', 'earliest') WHERE kind = 'buy' AND amount > 10",
        out, ready)).start()
    all_out, all_ready = queue.Queue(), threading.Event()
    threading.Thread(target=subscribe, daemon=True, args=(
        server.uri, "SELECT id, _bucket, _offset FROM changes('w', 'earliest')", all_out, all_ready)).start()
    assert ready.wait(30) and all_ready.wait(30)
    got = collect(out, len(want))
    assert sorted(r["id"] for r in got) == want
    where = {r["id"]: (r["_bucket"], r["_offset"]) for r in collect(all_out, 2000)}
    assert all(where[r["id"]] == (r["_bucket"], r["_offset"]) for r in got)
    # Nothing else came: the next row is a later match.
    more = gen_rows(5000, 10).to_pylist()
    more[3]["kind"], more[3]["amount"] = "buy", 99.0
    for r in more:
        if r is not more[3] and r["kind"] == "buy":
            r["kind"] = "view"
    ingest(conn, "w", pa.Table.from_pylist(more, schema=data.schema))
    assert [r["id"] for r in collect(out, 1)] == [5003]
    with pytest.raises(Exception) as e:
        query(conn, "SELECT id FROM changes('w', 'latest') WHERE id = 'abc'")
    assert "id = 'abc'" in str(e.value)


def test_hand_off_from_the_lake(tmp_path):
    """A subscription from before the retained log reads the lake first and
    continues in the log: every row once, each bucket in offset order, the
    same positions a log read gave; resume and timestamps work down there."""
    from conftest import Server
    srv = Server(tmp_path / "data", tmp_path / "server.log").start("--retention-check", "100ms")
    try:
        conn = flightsql.connect(srv.uri, autocommit=True)
        query(conn, "CREATE TABLE h (id BIGINT NOT NULL, batch BIGINT) WITH ('bucket.num'='2', 'bucket.key'='id', "
                    "'datalake.freshness'='1s', 'log.segment.bytes'='1MiB', 'log.retention'='1ms', "
                    "'log.compression'='none')")
        n = 10_000
        for i in range(20):  # 200k rows, ~3 MB: a few segments a bucket
            ingest(conn, "h", rows(i, n))
        # Before retention: every row's position and commit time, from the log.
        before = {r["id"]: r for r in query(conn, 'SELECT id, _bucket, _offset, _commit_timestamp FROM "h$changelog"').to_pylist()}
        assert len(before) == 20 * n
        deadline = time.monotonic() + 90
        while True:  # tiering, then retention, run on their own schedule
            starts = query(conn, 'SELECT _bucket, min(_offset) AS s FROM "h$changelog" GROUP BY _bucket').to_pylist()
            if len(starts) == 2 and all(r["s"] > 0 for r in starts):
                break
            assert time.monotonic() < deadline, f"retention deleted no tiered segment: {starts}"
            time.sleep(0.2)
        start = {r["_bucket"]: r["s"] for r in starts}

        out, ready = queue.Queue(), threading.Event()
        threading.Thread(target=subscribe, daemon=True, args=(
            srv.uri, "SELECT id, batch, _bucket, _offset, _commit_timestamp FROM changes('h', 'earliest')", out, ready)).start()
        assert ready.wait(30)
        got = collect(out, 20 * n, timeout=60)
        ingest(conn, "h", rows(20, n))  # then the live log, with no gap
        got += collect(out, n, timeout=60)
        assert sorted(r["id"] for r in got) == list(range(21 * n))
        for b in (0, 1):
            offs = [r["_offset"] for r in got if r["_bucket"] == b]
            assert offs == list(range(len(offs))), f"bucket {b}: offsets out of order or with gaps"
        for r in got:
            if r["id"] in before:
                w = before[r["id"]]
                assert (r["_bucket"], r["_offset"], r["_commit_timestamp"]) == \
                    (w["_bucket"], w["_offset"], w["_commit_timestamp"])

        # Resume from positions in the lake: exactly the later rows.
        at = {b: start[b] // 2 for b in (0, 1)}
        want = sorted(r["id"] for r in got if r["_offset"] >= at[r["_bucket"]])
        out2, ready2 = queue.Queue(), threading.Event()
        threading.Thread(target=subscribe, daemon=True, args=(
            srv.uri, f"SELECT id FROM changes('h', '0:{at[0]},1:{at[1]}')", out2, ready2)).start()
        assert ready2.wait(30)
        assert sorted(r["id"] for r in collect(out2, len(want), timeout=60)) == want

        # A timestamp in the lake's range starts each bucket at its first
        # row committed then or later (pyarrow.flight, one endpoint each).
        ts = sorted(w["_commit_timestamp"] for w in before.values())[len(before) // 4]
        want_ts = sorted(r["id"] for r in got if r["_commit_timestamp"] >= ts)
        client = fl.FlightClient(srv.uri)
        info = client.get_flight_info(fl.FlightDescriptor.for_command(flight_sql_query(
            f"SELECT id FROM changes('h', TIMESTAMP '{ts.strftime('%Y-%m-%d %H:%M:%S.%f')}', 2)")))
        out3 = queue.Queue()

        def read(ep):
            try:
                for chunk in client.do_get(ep.ticket):
                    if chunk.data.num_rows:
                        out3.put((time.perf_counter(), chunk.data.to_pylist()))
            except fl.FlightError:
                pass

        for ep in info.endpoints:
            threading.Thread(target=read, args=(ep,), daemon=True).start()
        assert sorted(r["id"] for r in collect(out3, len(want_ts), timeout=60)) == want_ts
        client.close()
        conn.close()
    finally:
        srv.stop()
