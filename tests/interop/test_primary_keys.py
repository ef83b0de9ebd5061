"""Primary-key tables through ADBC against a real server: upserts, DELETE and
UPDATE by predicate, partial updates, the merge engines, the changelog and
binlog views, and lookups through prepared statements."""
import pyarrow as pa
import pytest

from util import ingest, query

KV = ("CREATE TABLE kv (id BIGINT, region VARCHAR, amount DOUBLE, n BIGINT, PRIMARY KEY (id)) "
      "WITH ('bucket.num'='3')")


def kv_rows(ids, amount):
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "region": pa.array(["eu" if i % 2 == 0 else "us" for i in ids]),
        "amount": pa.array([float(amount)] * len(ids)),
        "n": pa.array(ids, pa.int64()),
    })


def rowcount(conn, sql, params=None):
    cur = conn.cursor()
    try:
        cur.execute(sql, params)
        return cur.rowcount
    finally:
        cur.close()


def state(conn, table, cols="*"):
    return query(conn, f"SELECT {cols} FROM {table} ORDER BY 1").to_pylist()


def test_upsert_delete_update_round_trip(conn):
    query(conn, KV)
    ingest(conn, "kv", kv_rows(range(0, 100), 1))
    ingest(conn, "kv", kv_rows(range(50, 150), 2))  # 50 updates, 50 new keys
    assert query(conn, "SELECT count(*) AS n, sum(amount) AS s FROM kv").to_pylist() == [{"n": 150, "s": 250.0}]
    assert rowcount(conn, "DELETE FROM kv WHERE amount = 2 AND id >= 140") == 10
    assert rowcount(conn, "UPDATE kv SET amount = amount * 10, n = -n WHERE region = 'eu' AND id < 10") == 5
    assert rowcount(conn, "DELETE FROM kv WHERE id IN (SELECT id FROM kv WHERE n < 0 AND id > 4)") == 2
    got = state(conn, "kv", "id, amount, n")
    assert len(got) == 138
    assert got[:5] == [{"id": 0, "amount": 10.0, "n": 0}, {"id": 1, "amount": 1.0, "n": 1},
                       {"id": 2, "amount": 10.0, "n": -2}, {"id": 3, "amount": 1.0, "n": 3},
                       {"id": 4, "amount": 10.0, "n": -4}]
    assert [r["id"] for r in got[-3:]] == [137, 138, 139]
    # INSERT over existing keys upserts.
    assert rowcount(conn, "INSERT INTO kv VALUES (1, 'xx', 5.0, 5), (1000, 'yy', 6.0, 6)") == 2
    assert query(conn, "SELECT region, amount FROM kv WHERE id = 1").to_pylist() == [{"region": "xx", "amount": 5.0}]
    assert query(conn, "SELECT count(*) AS n FROM kv").column("n")[0].as_py() == 139
    # Without WHERE: every row.
    assert rowcount(conn, "UPDATE kv SET n = 0") == 139
    assert rowcount(conn, "DELETE FROM kv") == 139
    assert query(conn, "SELECT count(*) AS n FROM kv").column("n")[0].as_py() == 0


def test_dml_errors(conn):
    query(conn, KV)
    query(conn, "CREATE TABLE logt (id BIGINT, v DOUBLE)")
    with pytest.raises(Exception, match="log table"):
        query(conn, "DELETE FROM logt WHERE id = 1")
    with pytest.raises(Exception, match="log table"):
        query(conn, "UPDATE logt SET v = 1")
    with pytest.raises(Exception, match="primary-key column"):
        query(conn, "UPDATE kv SET id = 5")
    with pytest.raises(Exception, match="nope"):
        query(conn, "UPDATE kv SET nope = 5")


def test_prepared_dml_with_parameters(conn):
    query(conn, KV)
    ingest(conn, "kv", kv_rows(range(10), 1))
    cur = conn.cursor()
    cur.execute("UPDATE kv SET amount = ? WHERE id = ?", (42.0, 3))
    assert cur.rowcount == 1
    cur.executemany("DELETE FROM kv WHERE id = ?", [(7,), (8,), (70,)])
    cur.close()
    got = state(conn, "kv", "id, amount")
    assert [r["id"] for r in got] == [0, 1, 2, 3, 4, 5, 6, 9]
    assert got[3] == {"id": 3, "amount": 42.0}


def test_partial_updates(conn):
    query(conn, KV)
    ingest(conn, "kv", kv_rows(range(4), 1))
    # An ingest with a subset of the columns (the key included) updates those.
    ingest(conn, "kv", pa.table({"id": pa.array([1, 2, 9], pa.int64()), "amount": pa.array([7.0, None, 9.0])}))
    # So does INSERT with a column list.
    query(conn, "INSERT INTO kv (id, region) VALUES (3, 'moon')")
    assert state(conn, "kv") == [
        {"id": 0, "region": "eu", "amount": 1.0, "n": 0},
        {"id": 1, "region": "us", "amount": 7.0, "n": 1},
        {"id": 2, "region": "eu", "amount": None, "n": 2},
        {"id": 3, "region": "moon", "amount": 1.0, "n": 3},
        {"id": 9, "region": None, "amount": 9.0, "n": None},
    ]
    with pytest.raises(Exception, match="id"):
        ingest(conn, "kv", pa.table({"amount": pa.array([1.0])}))


def test_merge_engine_first_row(conn):
    query(conn, "CREATE TABLE fr (id BIGINT, v VARCHAR, PRIMARY KEY (id)) WITH ('merge-engine'='first_row')")
    query(conn, "INSERT INTO fr VALUES (1, 'first'), (2, 'two')")
    query(conn, "INSERT INTO fr VALUES (1, 'second'), (3, 'three')")
    assert state(conn, "fr") == [{"id": 1, "v": "first"}, {"id": 2, "v": "two"}, {"id": 3, "v": "three"}]
    # A later write of an existing key produces no change.
    changes = query(conn, 'SELECT _change_type, id FROM "fr$changelog" ORDER BY _commit_timestamp, id').to_pylist()
    assert [(c["_change_type"], c["id"]) for c in changes] == [("+I", 1), ("+I", 2), ("+I", 3)]


def test_merge_engine_versioned(conn):
    query(conn, "CREATE TABLE ver (id BIGINT, ver BIGINT, v VARCHAR, PRIMARY KEY (id)) "
                "WITH ('merge-engine'='versioned', 'merge-engine.versioned.ver-column'='ver')")
    query(conn, "INSERT INTO ver VALUES (1, 5, 'five'), (2, 1, 'one')")
    query(conn, "INSERT INTO ver VALUES (1, 3, 'older'), (2, 2, 'newer')")
    assert state(conn, "ver") == [{"id": 1, "ver": 5, "v": "five"}, {"id": 2, "ver": 2, "v": "newer"}]


def test_merge_engine_aggregation(conn):
    query(conn, "CREATE TABLE agg (id BIGINT, total DOUBLE, hi BIGINT, cnt BIGINT, last VARCHAR, PRIMARY KEY (id)) "
                "WITH ('merge-engine'='aggregation', 'fields.total.agg'='sum', 'fields.hi.agg'='max', "
                "'fields.cnt.agg'='count', 'fields.last.agg'='last_non_null_value')")
    query(conn, "INSERT INTO agg VALUES (1, 1.5, 3, 1, 'a'), (2, 10, 1, 1, 'x')")
    query(conn, "INSERT INTO agg VALUES (1, 2.5, 2, 1, NULL)")
    ingest(conn, "agg", pa.table({"id": pa.array([1], pa.int64()), "total": pa.array([1.0]),
                                  "hi": pa.array([9], pa.int64()), "cnt": pa.array([1], pa.int64()),
                                  "last": pa.array(["b"])}))
    assert state(conn, "agg") == [{"id": 1, "total": 5.0, "hi": 9, "cnt": 3, "last": "b"},
                                  {"id": 2, "total": 10.0, "hi": 1, "cnt": 1, "last": "x"}]


def test_changes_show_updates_and_deletes(conn):
    query(conn, "CREATE TABLE c (id BIGINT, v DOUBLE, PRIMARY KEY (id))")
    query(conn, "INSERT INTO c VALUES (1, 1.0), (2, 2.0)")
    query(conn, "INSERT INTO c VALUES (1, 1.5)")
    query(conn, "UPDATE c SET v = 2.5 WHERE id = 2")
    query(conn, "DELETE FROM c WHERE id = 1")
    want = [("+I", 1, 1.0), ("+I", 2, 2.0), ("-U", 1, 1.0), ("+U", 1, 1.5), ("-U", 2, 2.0), ("+U", 2, 2.5),
            ("-D", 1, 1.5)]
    cl = query(conn, 'SELECT _change_type, id, v FROM "c$changelog" ORDER BY _commit_timestamp, _bucket, _offset')
    assert [(r["_change_type"], r["id"], r["v"]) for r in cl.to_pylist()] == want
    # changes() from earliest streams the same changes; read as many as were written.
    cur = conn.cursor()
    cur.execute("SELECT _change_type, id, v FROM changes('c', 'earliest')")
    reader = cur.fetch_record_batch()
    got = []
    while len(got) < len(want):
        got += [(r["_change_type"], r["id"], r["v"]) for r in reader.read_next_batch().to_pylist()]
    cur.close()
    assert sorted(got) == sorted(want)
    # Per key, in write order.
    assert [g for g in got if g[1] == 1] == [w for w in want if w[1] == 1]


def test_binlog_pairs_before_and_after(conn):
    query(conn, "CREATE TABLE b (id BIGINT, v VARCHAR, PRIMARY KEY (id))")
    query(conn, "INSERT INTO b VALUES (1, 'a'), (2, 'b')")
    query(conn, "UPDATE b SET v = 'c' WHERE id = 1")
    query(conn, "DELETE FROM b WHERE id = 2")
    t = query(conn, 'SELECT * FROM "b$binlog" ORDER BY _offset')
    assert t.schema.names == ["_change_type", "_bucket", "_offset", "_commit_timestamp", "before", "after"]
    rows = [(r["_change_type"], r["_offset"], r["before"], r["after"]) for r in t.to_pylist()]
    assert rows == [
        ("insert", 0, None, {"id": 1, "v": "a"}),
        ("insert", 1, None, {"id": 2, "v": "b"}),
        ("update", 3, {"id": 1, "v": "a"}, {"id": 1, "v": "c"}),  # the +U's offset
        ("delete", 4, {"id": 2, "v": "b"}, None),
    ]
    assert query(conn, 'SELECT after.v AS v FROM "b$binlog" WHERE _change_type = \'update\'').to_pylist() == [{"v": "c"}]


def test_lookups_through_prepared_statements(conn):
    query(conn, KV)
    ingest(conn, "kv", kv_rows(range(1000), 1))
    ingest(conn, "kv", kv_rows([5], 9))
    cur = conn.cursor()
    # One key, as a parameter: the same prepared statement, executed again.
    for key, want in [(5, [{"id": 5, "amount": 9.0}]), (6, [{"id": 6, "amount": 1.0}]), (5000, [])]:
        cur.execute("SELECT id, amount FROM kv WHERE id = ?", (key,))
        assert cur.fetch_arrow_table().to_pylist() == want
    # An IN list.
    cur.execute("SELECT id, n FROM kv WHERE id IN (3, 1, 3, 77777)")
    assert sorted(r["id"] for r in cur.fetch_arrow_table().to_pylist()) == [1, 3]
    # A batch: a record batch of keys bound to the statement is one lookup;
    # the result has the row of each key that exists, in the keys' order.
    keys = pa.record_batch({"1": pa.array([10, 4000, 2, 999, 10], pa.int64())})
    cur.execute("SELECT id, region FROM kv WHERE id = ?", keys)
    assert cur.fetch_arrow_table().to_pylist() == [
        {"id": 10, "region": "eu"}, {"id": 2, "region": "eu"}, {"id": 999, "region": "us"}, {"id": 10, "region": "eu"}]
    cur.close()


def test_composite_key_lookup(conn):
    query(conn, "CREATE TABLE ck (region VARCHAR, id BIGINT, v DOUBLE, PRIMARY KEY (region, id)) WITH ('bucket.num'='2')")
    query(conn, "INSERT INTO ck VALUES ('eu', 1, 1.0), ('us', 1, 2.0), ('eu', 2, 3.0)")
    cur = conn.cursor()
    cur.execute("SELECT v FROM ck WHERE region = ? AND id = ?", ("us", 1))
    assert cur.fetch_arrow_table().to_pylist() == [{"v": 2.0}]
    cur.close()


def test_prefix_lookup_of_the_bucket_key(conn):
    # Bucketed by the key's leading column: a lookup of that column reads
    # one bucket's range of the key index (every key that begins with it).
    query(conn, "CREATE TABLE acct (tenant VARCHAR, id BIGINT, v BIGINT, PRIMARY KEY (tenant, id)) "
                "WITH ('bucket.num'='4', 'bucket.key'='tenant')")
    ingest(conn, "acct", pa.table({
        "tenant": pa.array([f"t{i % 10}" for i in range(1000)]),
        "id": pa.array(range(1000), pa.int64()),
        "v": pa.array(range(1000), pa.int64())}))
    query(conn, "DELETE FROM acct WHERE tenant = 't3' AND id < 500")
    cur = conn.cursor()
    for tenant in ["t3", "t7", "nobody"]:
        cur.execute("SELECT id, v FROM acct WHERE tenant = ?", (tenant,))
        got = sorted(r["id"] for r in cur.fetch_arrow_table().to_pylist())
        want = [i for i in range(1000) if f"t{i % 10}" == tenant and not (tenant == "t3" and i < 500)]
        assert got == want, tenant
    cur.close()


def test_plain_flight_scan_of_pk_table_reads_the_state(server, conn):
    import pyarrow.flight as fl
    query(conn, KV)
    ingest(conn, "kv", kv_rows(range(10), 1))
    ingest(conn, "kv", kv_rows(range(10), 2))
    query(conn, "DELETE FROM kv WHERE id < 3")
    client = fl.connect(server.uri)
    info = client.get_flight_info(fl.FlightDescriptor.for_path("kv"))
    got = pa.concat_tables([client.do_get(ep.ticket).read_all() for ep in info.endpoints])
    assert sorted(got.column("id").to_pylist()) == list(range(3, 10))
    assert set(got.column("amount").to_pylist()) == {2.0}
    client.close()
