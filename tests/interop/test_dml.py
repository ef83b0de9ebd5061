"""INSERT and the changelog view, through ADBC against a real server."""
import pyarrow as pa
import pytest

from util import gen_rows, ingest, query


def test_insert_values_and_select(conn):
    query(conn, "CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR, amount DECIMAL(10,2), ts TIMESTAMPTZ) "
                "WITH ('bucket.num'='2', 'bucket.key'='id')")
    cur = conn.cursor()
    cur.execute("INSERT INTO t VALUES (1, 'a', 1.5, TIMESTAMPTZ '2026-01-01 00:00:00+00'), (2, NULL, 2.25, NULL)")
    assert cur.rowcount == 2
    cur.execute("INSERT INTO t (id, name) VALUES (3, 'c')")
    cur.execute("INSERT INTO t SELECT id + 10, upper(name), amount * 2, ts FROM t WHERE id < 3")
    assert cur.rowcount == 2
    cur.close()
    got = query(conn, "SELECT id, name, amount FROM t ORDER BY id").to_pylist()
    assert [r["id"] for r in got] == [1, 2, 3, 11, 12]
    assert got[2]["amount"] is None and got[3]["name"] == "A"
    assert str(got[4]["amount"]) == "4.50"
    with pytest.raises(Exception, match="id"):
        query(conn, "INSERT INTO t (name) VALUES ('no id')")
    with pytest.raises(Exception, match="nope"):
        query(conn, "INSERT INTO t (nope) VALUES (1)")
    assert query(conn, "SELECT count(*) AS n FROM t").column("n")[0].as_py() == 5


def test_insert_with_parameters(conn):
    query(conn, "CREATE TABLE p (id BIGINT, v VARCHAR)")
    cur = conn.cursor()
    cur.execute("INSERT INTO p VALUES (?, ?)", (1, "one"))
    cur.executemany("INSERT INTO p VALUES (?, ?)", [(2, "two"), (3, "three")])
    cur.close()
    got = query(conn, "SELECT * FROM p ORDER BY id").to_pylist()
    assert got == [{"id": 1, "v": "one"}, {"id": 2, "v": "two"}, {"id": 3, "v": "three"}]


def test_changelog_view(conn):
    query(conn, "CREATE TABLE c (id BIGINT NOT NULL, v DOUBLE) WITH ('bucket.num'='3', 'bucket.key'='id')")
    ingest(conn, "c", pa.table({"id": pa.array(range(100), pa.int64()), "v": pa.array([1.0] * 100)}))
    ingest(conn, "c", pa.table({"id": pa.array(range(100, 150), pa.int64()), "v": pa.array([2.0] * 50)}))
    t = query(conn, 'SELECT id, _change_type, _bucket, _offset, _commit_timestamp FROM "c$changelog"')
    assert t.num_rows == 150
    assert set(t.column("_change_type").to_pylist()) == {"+A"}
    assert t.schema.field("_commit_timestamp").type == pa.timestamp("us", tz="UTC")
    # Offsets are dense per bucket, from 0.
    for b in range(3):
        offs = sorted(r["_offset"] for r in t.to_pylist() if r["_bucket"] == b)
        assert offs == list(range(len(offs)))
    # The second ingest committed after the first.
    rows = query(conn, 'SELECT max(_commit_timestamp) FILTER (WHERE id < 100) < min(_commit_timestamp) FILTER '
                       '(WHERE id >= 100) AS ordered FROM "c$changelog"')
    assert rows.column(0)[0].as_py() is True
