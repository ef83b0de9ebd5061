"""SQL through Python ADBC: queries with bound parameters ("?" and "$n"),
GROUP BY / ORDER BY / JOIN checked against pyarrow over the same rows,
DuckDB's errors reaching the client, and every statement the DuckDB
lockdown refuses (docs/sql.md) failing while the server keeps serving."""
import datetime
import re

import adbc_driver_manager
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from conftest import Server
from util import gen_rows, ingest, query

ROWS = 20_000

EVENTS = ("CREATE TABLE events (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ) "
          "WITH ('bucket.num'='4', 'bucket.key'='id', 'log.compression'='zstd')")


@pytest.fixture(scope="module")
def sql_server(tmp_path_factory):
    """One node for the module, with `events` (ROWS rows of gen_rows) and
    `labels` (kind -> label); the tests only read."""
    import adbc_driver_flightsql.dbapi as flightsql
    tmp = tmp_path_factory.mktemp("sql")
    srv = Server(tmp / "data", tmp / "server.log").start()
    c = flightsql.connect(srv.uri, autocommit=True)
    query(c, EVENTS)
    for start in range(0, ROWS, 5000):
        ingest(c, "events", gen_rows(start, 5000))
    ingest(c, "labels", pa.table({"kind": ["click", "view", "buy", "löschen"],
                                  "label": ["browse", "browse", "order", "delete"]}), mode="create")
    c.close()
    yield srv
    assert srv.stop() == 0, srv.tail()


@pytest.fixture
def sconn(sql_server):
    import adbc_driver_flightsql.dbapi as flightsql
    c = flightsql.connect(sql_server.uri, autocommit=True)
    yield c
    c.close()


@pytest.fixture(scope="module")
def rows():
    return pa.concat_tables([gen_rows(start, 5000) for start in range(0, ROWS, 5000)])


def sorted_ids(t):
    return sorted(t.column("id").to_pylist())


def test_qmark_parameters(sconn, rows):
    cur = sconn.cursor()
    try:
        cur.execute("SELECT id, amount, kind FROM events WHERE id > ? AND kind = ?", (10, "buy"))
        got = cur.fetch_arrow_table()
        want = rows.filter(pc.and_(pc.greater(rows["id"], 10), pc.equal(rows["kind"], "buy")))
        assert got.num_rows == want.num_rows > 0
        assert sorted_ids(got) == sorted_ids(want)
        assert set(got.column("kind").to_pylist()) == {"buy"}
        # The same statement again with other values (the cursor re-binds
        # its prepared statement), a non-ASCII string among them.
        for lo, kind in [(ROWS - 500, "löschen"), (ROWS, "buy"), (10, "buy")]:
            cur.execute("SELECT id, amount, kind FROM events WHERE id > ? AND kind = ?", (lo, kind))
            got = cur.fetch_arrow_table()
            want = rows.filter(pc.and_(pc.greater(rows["id"], lo), pc.equal(rows["kind"], kind)))
            assert sorted_ids(got) == sorted_ids(want), (lo, kind)
    finally:
        cur.close()


def test_dollar_parameters(sconn, rows):
    # Numbered out of their order in the text, $2 used twice.
    got = query(sconn, "SELECT id, kind FROM events WHERE kind = $2 AND id < $1 AND kind <> $3 AND $2 <> $3 ORDER BY id",
                (1000, "view", "buy"))
    want = rows.filter(pc.and_(pc.less(rows["id"], 1000), pc.equal(rows["kind"], "view")))
    assert got.column("id").to_pylist() == sorted_ids(want)


def test_typed_parameters(sconn, rows):
    """float, timestamp and NULL parameters bind with their types."""
    got = query(sconn, "SELECT count(*) AS n FROM events WHERE amount > ?", (500.5,))
    assert got.column("n")[0].as_py() == pc.sum(pc.greater(rows["amount"], 500.5)).as_py()
    cut = datetime.datetime(2023, 11, 14, 22, 13, 21, tzinfo=datetime.timezone.utc)
    got = query(sconn, "SELECT count(*) AS n FROM events WHERE ts < ?", (cut,))
    assert got.column("n")[0].as_py() == pc.sum(pc.less(rows["ts"], pa.scalar(cut, rows["ts"].type))).as_py()
    got = query(sconn, "SELECT count(*) AS n FROM events WHERE kind = ?", (None,))
    assert got.column("n")[0].as_py() == 0


def test_group_by_order_by(sconn, rows):
    got = query(sconn, "SELECT kind, count(*) AS n, sum(amount) AS total, min(id) AS lo, max(id) AS hi "
                       "FROM events WHERE id >= ? GROUP BY kind ORDER BY n DESC, kind", (100,))
    sub = rows.filter(pc.greater_equal(rows["id"], 100))
    want = sub.group_by("kind").aggregate([("id", "count"), ("amount", "sum"), ("id", "min"), ("id", "max")])
    want = {r["kind"]: r for r in want.to_pylist()}
    assert got.column("kind").to_pylist() == sorted(want, key=lambda k: (-want[k]["id_count"], k))
    for r in got.to_pylist():
        w = want[r["kind"]]
        assert (r["n"], r["lo"], r["hi"]) == (w["id_count"], w["id_min"], w["id_max"])
        assert r["total"] == pytest.approx(w["amount_sum"], rel=1e-12)

    top = query(sconn, "SELECT id, amount FROM events ORDER BY amount DESC, id LIMIT 5 OFFSET 2")
    want = rows.sort_by([("amount", "descending"), ("id", "ascending")]).slice(2, 5)
    assert top.column("id").to_pylist() == want.column("id").to_pylist()


def test_join(sconn, rows):
    got = query(sconn, "SELECT l.label, count(*) AS n FROM events e JOIN labels l ON e.kind = l.kind "
                       "WHERE e.id < ? GROUP BY l.label ORDER BY l.label", (5000,))
    labels = {"click": "browse", "view": "browse", "buy": "order", "löschen": "delete"}
    want = {}
    for k in rows.filter(pc.less(rows["id"], 5000)).column("kind").to_pylist():
        if k in labels:
            want[labels[k]] = want.get(labels[k], 0) + 1
    assert [(r["label"], r["n"]) for r in got.to_pylist()] == sorted(want.items())

    # A self-join through a CTE.
    got = query(sconn, "WITH a AS (SELECT id, kind FROM events WHERE id < 100) "
                       "SELECT x.id FROM a x JOIN a y ON x.id = y.id + 1 AND x.kind = y.kind ORDER BY x.id")
    small = rows.slice(0, 100).column("kind").to_pylist()
    assert got.column("id").to_pylist() == [i for i in range(1, 100) if small[i] == small[i - 1]]


def test_syntax_error_carries_duckdb_message(sconn):
    with pytest.raises(adbc_driver_manager.Error) as e:
        query(sconn, "SELEC id FROM events WHERE id > ?", (1,))
    msg = str(e.value)
    assert 'Parser Error: syntax error at or near "SELEC"' in msg, msg
    assert "LINE 1:" in msg, f"no position in {msg}"  # DuckDB points at the token
    with pytest.raises(adbc_driver_manager.Error, match="syntax error at end of input"):
        query(sconn, "SELECT id FROM events WHERE")


@pytest.mark.parametrize("sql,params", [
    ("SELECT * FROM no_such_table", None),                            # plain scan path
    ("SELECT count(*) FROM no_such_table WHERE id > ?", (1,)),        # DuckDB path
    ("SELECT e.id FROM events e JOIN no_such_table t ON e.id = t.id", None),
])
def test_unknown_table_is_named(sconn, sql, params):
    with pytest.raises(adbc_driver_manager.Error) as e:
        query(sconn, sql, params)
    assert "no_such_table" in str(e.value), str(e.value)
    assert "NOT_FOUND" in str(e.value) or "not exist" in str(e.value) or "not found" in str(e.value), str(e.value)


def test_unknown_column_is_named(sconn):
    with pytest.raises(adbc_driver_manager.Error, match="nocol"):
        query(sconn, "SELECT nocol FROM events WHERE id > 1")


# Each statement the lockdown refuses, with what its error must mention
# besides the reason (WHY). The file paths are per run (the fixture's tmp dir, as {tmp}) so that a file
# that is there is refused for the lockdown, not for being missing, and a
# file that must not be written can be checked for.
REFUSED = [
    ("SELECT * FROM read_csv('/etc/passwd')", ["/etc/passwd"]),
    ("SELECT * FROM read_csv_auto('/etc/passwd')", ["/etc/passwd"]),
    ("SELECT * FROM read_parquet('{tmp}/x.parquet')", ["x.parquet"]),
    ("SELECT * FROM read_parquet('/tmp/x.parquet')", ["/tmp/x.parquet"]),
    ("SELECT * FROM '{tmp}/x.parquet'", ["x.parquet"]),
    ("COPY (SELECT 1) TO '{tmp}/x.csv'", ["x.csv"]),
    ("COPY (SELECT 1) TO '/tmp/x.csv'", []),
    ("COPY events TO '{tmp}/events.csv'", []),
    ("ATTACH '{tmp}/x.db'", ["ATTACH"]),
    ("ATTACH '/tmp/x.db' AS x", ["ATTACH"]),
    ("INSTALL httpfs", []),
    ("LOAD httpfs", []),
    ("SET enable_external_access=true", ["SET"]),
    ("SET GLOBAL threads=1", ["SET"]),
    ("SET lock_configuration=false", ["SET"]),
    ("RESET enable_external_access", []),
    ("PRAGMA threads=1", []),
    ("PRAGMA enable_profiling", []),
    ("CALL enable_profiling()", []),
    ("EXPORT DATABASE '{tmp}/export'", []),
    ("SELECT * FROM glob('/etc/*')", ["/etc/*"]),
]


# Every refusal says why: file access is disabled, or only SELECT runs.
WHY = re.compile(r"disabled by configuration|only SELECT", re.I)


@pytest.mark.parametrize("sql,words", REFUSED, ids=[s for s, _ in REFUSED])
def test_lockdown_refusal(sql_server, sconn, tmp_path, sql, words):
    tmp = str(tmp_path)
    pq.write_table(pa.table({"a": [1, 2, 3]}), tmp_path / "x.parquet")
    sql = sql.replace("{tmp}", tmp)
    before = set(p.name for p in tmp_path.iterdir())
    with pytest.raises(adbc_driver_manager.Error) as e:
        query(sconn, sql)
    msg = str(e.value)
    assert WHY.search(msg), f"{sql}: the error does not say why: {msg}"
    for w in words:
        assert w.lower() in msg.lower(), f"{sql}: error does not mention {w!r}: {msg}"
    assert set(p.name for p in tmp_path.iterdir()) == before, f"{sql} wrote into {tmp}"
    # The node is alive and this connection still answers, with DuckDB.
    assert sql_server.proc.poll() is None, sql_server.tail()
    got = query(sconn, "SELECT count(*) AS n FROM events WHERE id < ?", (7,))
    assert got.column("n")[0].as_py() == 7


def test_refusals_leave_settings_locked(sql_server, sconn):
    """After every refused statement, file access is still refused: none of
    them changed a setting on the way to failing."""
    for sql, _ in REFUSED:
        try:
            query(sconn, sql.replace("{tmp}", "/tmp"))
        except adbc_driver_manager.Error:
            pass
    with pytest.raises(adbc_driver_manager.Error, match="/etc/passwd"):
        query(sconn, "SELECT * FROM read_csv('/etc/passwd')")
    assert sql_server.proc.poll() is None, sql_server.tail()
