"""The client matrix: what real clients do first, each against one node.

- Python ADBC: typed parameters of every basic type (typed.py), compared
  with DuckDB's answer (the duckdb package in-process) for the same
  statement and the same typed values; prepared INSERT of typed rows and
  WHERE col = ? over them, compared the same way.
- pandas: read_sql, and to_sql of 2M rows (with the ADBC option that
  raises the client's 16 MiB message limit, docs/flight.md).
- polars: read_database, read_database_uri (the flightsql:// URI with
  ?transport=tcp), write_database in create and append modes.
- pyarrow.flight: list_flights, get_flight_info, get_schema, do_get, do_put.
"""
import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.flight as paflight
import pytest

from conftest import Server
from typed import BASIC, duck_params, params, statements
from util import query

# DuckDB's DB-API results warn that Arrow output copies: the reference is small.
pytestmark = pytest.mark.filterwarnings("ignore:Arrow output on a DB-API result")

MAX_MSG = str(256 << 20)  # the server's own receive limit (docs/flight.md)


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("clients")
    srv = Server(tmp / "data", tmp / "server.log").start()
    yield srv
    assert srv.stop() == 0, srv.tail()


@pytest.fixture
def adbc(node):
    import adbc_driver_flightsql.dbapi as flightsql
    c = flightsql.connect(node.uri, autocommit=True,
                          db_kwargs={"adbc.flight.sql.client_option.with_max_msg_size": MAX_MSG})
    yield c
    c.close()


@pytest.fixture(scope="module")
def ref():
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    yield con
    con.close()


def same(got, want, what):
    """Same column types and values; names too."""
    assert got.column_names == want.column_names, what
    for g, w in zip(got.schema, want.schema):
        assert g.type == w.type, f"{what}: column {g.name} is {g.type}, DuckDB says {w.type}"
    assert got.to_pylist() == want.to_pylist(), what


@pytest.mark.parametrize("b", BASIC, ids=repr)
def test_adbc_typed_parameters(adbc, ref, b):
    cur = adbc.cursor()
    try:
        for sql, pairs in statements(b):
            cur.execute(sql, params(*pairs))
            got = cur.fetch_arrow_table()
            want = ref.execute(sql, duck_params(*pairs)).to_arrow_table()
            same(got, want, f"{sql} with {b.name} {[v for _, v in pairs]}")
    finally:
        cur.close()


def typed_table_sql(name):
    cols = ", ".join(f"c_{b.name} {b.sql}" for b in BASIC)
    return f"CREATE TABLE {name} (id BIGINT, {cols})"


def announced(t):
    """The parameter type a prepared statement announces for a column of
    Arrow type t: TIME and TIMESTAMP in milliseconds, for the JDBC driver
    (docs/flight.md); clients bind at the precision they send."""
    if pa.types.is_time(t):
        return pa.time32("ms")
    if pa.types.is_timestamp(t):
        return pa.timestamp("ms", tz=t.tz)
    return t


def test_adbc_prepared_insert_and_where(adbc, ref):
    """INSERT parameters take the target columns' types; WHERE col = ? with
    each typed value finds its row, as in DuckDB."""
    insert = f"INSERT INTO typed VALUES (?{', ?' * len(BASIC)})"
    query(adbc, typed_table_sql("typed"))
    ref.execute(typed_table_sql("typed"))
    cur = adbc.cursor()
    try:
        schema = cur.adbc_prepare(insert)
        assert [f.type for f in schema][1:] == [announced(b.arrow) for b in BASIC], schema
        for i, pick in enumerate([lambda b: b.lo, lambda b: b.hi]):
            pairs = [(b, pick(b)) for b in BASIC]
            row = pa.record_batch([pa.array([i], pa.int64())] + list(params(*pairs).columns),
                                  names=[str(k) for k in range(len(BASIC) + 1)])
            cur.execute(insert, row)
            ref.execute(insert, [i] + duck_params(*pairs))
    finally:
        cur.close()
    same(query(adbc, "SELECT * FROM typed ORDER BY id"),
         ref.execute("SELECT * FROM typed ORDER BY id").to_arrow_table(), "typed rows")
    for b in BASIC:
        sql = f"SELECT id FROM typed WHERE c_{b.name} = ? ORDER BY id"
        same(query(adbc, sql, params((b, b.hi))), ref.execute(sql, duck_params((b, b.hi))).to_arrow_table(), sql)


def test_adbc_parameter_errors(adbc):
    import adbc_driver_manager
    cur = adbc.cursor()
    try:
        with pytest.raises(adbc_driver_manager.ProgrammingError, match="2 parameters, 1 were bound"):
            cur.execute("SELECT ? + ?", (1,))
    finally:
        cur.close()


def test_adbc_current_catalog_and_schema(adbc):
    assert adbc.adbc_current_catalog == "lakestream"
    assert adbc.adbc_current_db_schema == "default"


ROWS = 2_000_000


def test_pandas_read_sql_and_to_sql(adbc):
    import pandas as pd
    rng = np.random.default_rng(3)
    df = pd.DataFrame({
        "id": np.arange(ROWS, dtype=np.int64),
        "amount": rng.random(ROWS),
        "kind": np.array(["click", "view", "buy", "löschen"])[rng.integers(0, 4, ROWS)],
    })
    assert df.to_sql("pd_events", adbc, index=False, if_exists="fail") == ROWS
    got = pd.read_sql("SELECT count(*) AS n, sum(id) AS s, sum(amount) AS a FROM pd_events", adbc)
    assert got["n"][0] == ROWS
    assert int(got["s"][0]) == int(df["id"].sum())  # sum(BIGINT) is HUGEINT: decimal(38,0)
    assert got["a"][0] == pytest.approx(df["amount"].sum())
    kinds = pd.read_sql("SELECT kind, count(*) AS n FROM pd_events GROUP BY kind ORDER BY kind", adbc)
    want = df.groupby("kind").size().sort_index()
    assert list(kinds["kind"]) == list(want.index)
    assert list(kinds["n"]) == list(want)
    back = pd.read_sql("SELECT * FROM pd_events WHERE id < 5 ORDER BY id", adbc)
    assert back.to_dict("list") == df.head(5).to_dict("list")


# polars opens its own connections for URIs without autocommit, which the
# ADBC driver manager warns about: Lakestream has no transactions.
@pytest.mark.filterwarnings("ignore:Cannot disable autocommit")
def test_polars(adbc, node):
    import polars as pl
    uri = f"flightsql://127.0.0.1:{node.port}?transport=tcp"  # docs/flight.md
    frame = pl.DataFrame({"id": [1, 2, 3], "name": ["a", "b", None], "x": [0.5, None, 2.0]})
    frame.write_database("pl_events", connection=uri, engine="adbc", if_table_exists="fail")
    frame.write_database("pl_events", connection=uri, engine="adbc", if_table_exists="append")
    got = pl.read_database("SELECT * FROM pl_events ORDER BY id, name", connection=adbc)
    want = pl.concat([frame, frame]).sort(["id", "name"], nulls_last=False)
    assert got.to_dicts() == want.to_dicts()
    got = pl.read_database_uri("SELECT id, count(*) AS n FROM pl_events GROUP BY id ORDER BY id", uri=uri, engine="adbc")
    assert got.to_dicts() == [{"id": 1, "n": 2}, {"id": 2, "n": 2}, {"id": 3, "n": 2}]


def test_pyarrow_flight(adbc, node):
    query(adbc, "CREATE TABLE fl (id BIGINT NOT NULL, kind VARCHAR)")
    client = paflight.connect(node.uri)
    desc = paflight.FlightDescriptor.for_path("default", "fl")
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "kind": ["a", "b", None]},
                    schema=pa.schema([pa.field("id", pa.int64(), nullable=False), ("kind", pa.string())]))
    writer, reader = client.do_put(desc, data.schema)
    writer.write_table(data)
    writer.done_writing()
    assert reader.read().to_pybytes() == b"3"
    writer.close()
    listed = {tuple(p.decode() for p in info.descriptor.path): info for info in client.list_flights()}
    assert ("default", "fl") in listed
    schema = client.get_schema(desc).schema
    assert [f.name for f in schema] == ["id", "kind"] and schema.field("id").type == pa.int64()
    assert schema.field("id").metadata[b"ARROW:FLIGHT:SQL:TYPE_NAME"] == b"BIGINT"
    info = client.get_flight_info(desc)
    assert info.total_records == 3
    got = pa.concat_tables([client.do_get(ep.ticket).read_all() for ep in info.endpoints])
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == data.to_pylist()
    client.close()
