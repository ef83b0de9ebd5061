"""lakestream.subscribe (python/lakestream/_subscribe.py, docs/python.md):
every row once across a node restart, with the position after each batch;
starts resolved per bucket (earliest, latest, a timestamp, explicit)."""
import datetime
import queue
import threading
import time

import pyarrow as pa
import pytest

from util import ingest, query

lakestream = pytest.importorskip("lakestream", reason="the package of python/ (make venv installs it)")


def rows(start, n):
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "v": pa.array([start] * n, pa.int64())})


def test_subscribe_resumes_by_itself_across_a_restart(server, conn):
    query(conn, "CREATE TABLE sub (id BIGINT NOT NULL, v BIGINT) WITH ('bucket.num'='3', 'bucket.key'='id')")
    ingest(conn, "sub", rows(0, 3000))
    out, stop = queue.Queue(), threading.Event()

    def consume():
        try:
            for batch, pos in lakestream.subscribe(server.uri, "sub", "earliest", columns=["id"],
                                                   retry_seconds=0.1, max_failures=600):
                out.put((batch.column("id").to_pylist(), dict(pos)))
                if stop.is_set():
                    return
        except Exception as e:  # reported to the test
            out.put((e, None))

    threading.Thread(target=consume, daemon=True).start()
    got, pos = [], {}

    def take(n, timeout=60):
        nonlocal pos
        deadline = time.monotonic() + timeout
        while len(got) < n:
            ids, p = out.get(timeout=max(0.1, deadline - time.monotonic()))
            if isinstance(ids, Exception):
                raise ids
            got.extend(ids)
            pos = p

    take(3000)
    server.stop()
    server.start()
    import adbc_driver_flightsql.dbapi as flightsql
    with flightsql.connect(server.uri, autocommit=True) as c:
        ingest(c, "sub", rows(3000, 2000))
        take(5000)
        stop.set()
        ingest(c, "sub", rows(5000, 1))  # wakes the consumer so that it returns
    assert sorted(got) == list(range(5000)), "a row lost or repeated across the restart"
    assert sum(pos.values()) == 5000


def test_starts_resolve_per_bucket(server, conn):
    from lakestream._subscribe import resolve_start
    query(conn, "CREATE TABLE st (id BIGINT NOT NULL, v BIGINT) WITH ('bucket.num'='2', 'bucket.key'='id')")
    ingest(conn, "st", rows(0, 100))
    client = lakestream.Client(server.uri)
    offs = client.offsets("st")
    ends = {b: e for b, (_, _, e) in offs.items()}
    assert sum(ends.values()) == 100 and set(ends) == {0, 1}
    assert resolve_start(client, "st", "earliest") == {0: 0, 1: 0}
    assert resolve_start(client, "st", "latest") == ends
    assert resolve_start(client, "st", "1:7") == {0: 0, 1: 7}
    assert resolve_start(client, "st", '{"0": 3}') == {0: 3, 1: 0}
    with pytest.raises(ValueError, match="no bucket"):
        resolve_start(client, "st", "5:0")
    now = datetime.datetime.now(datetime.timezone.utc)
    assert resolve_start(client, "st", now - datetime.timedelta(hours=1)) == {0: 0, 1: 0}
    assert resolve_start(client, "st", now + datetime.timedelta(hours=1)) == ends
    # Commit timestamps are the node's clock, this machine's: every row of
    # a write made after mark is committed at or after it.
    last = query(conn, 'SELECT max(_commit_timestamp) t FROM "st$changelog"').column("t")[0].as_py()
    while datetime.datetime.now(datetime.timezone.utc) <= last:
        time.sleep(0.001)  # the next write's commit time must be past the first's
    mark = datetime.datetime.now(datetime.timezone.utc)
    ingest(conn, "st", rows(100, 10))
    assert resolve_start(client, "st", f"timestamp:{mark.isoformat()}") == ends
    with pytest.raises(LookupError, match="nope"):
        client.offsets("nope")
    client.close()
