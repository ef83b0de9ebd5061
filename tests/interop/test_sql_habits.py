"""The SQL habits users bring from DuckDB, PostgreSQL and MySQL, through the
real clients: CREATE TABLE ... AS, persistent views, SHOW / DESCRIBE,
DuckDB 2.0's identifiers, and the errors a client gets for its mistakes."""
import subprocess

import duckdb
import pyarrow as pa
import pytest

from conftest import BIN


def run(conn, sql):
    cur = conn.cursor()
    try:
        cur.execute(sql)
        return cur.fetch_arrow_table()
    finally:
        cur.close()


def rows(conn, sql):
    return [tuple(r.values()) for r in run(conn, sql).to_pylist()]


def fails(conn, sql):
    with pytest.raises(Exception) as e:
        run(conn, sql)
    return str(e.value)


@pytest.fixture
def events(conn):
    run(conn, "CREATE TABLE e (id BIGINT NOT NULL, kind VARCHAR, amount DOUBLE)")
    run(conn, "INSERT INTO e VALUES (1, 'a', 1.5), (2, 'b', 2.5), (3, 'a', 3.0)")
    return conn


def test_create_table_as(events):
    conn = events
    run(conn, "CREATE TABLE s WITH ('bucket.num' = '2') AS "
              "SELECT kind, sum(amount) AS total, count(*) n FROM e GROUP BY kind")
    assert rows(conn, "SELECT * FROM s ORDER BY kind") == [("a", 4.5, 2), ("b", 2.5, 1)]
    (name, ddl), = rows(conn, "SHOW CREATE TABLE s")
    assert name == "default.s" and "WITH ('bucket.num' = '2')" in ddl and "n BIGINT" in ddl
    # A primary key is declared in parentheses before AS.
    run(conn, "CREATE TABLE k (PRIMARY KEY (id)) AS SELECT id, kind FROM e")
    assert rows(conn, "DESCRIBE k")[0] == ("id", "BIGINT", "NO", "PRI", None, None)
    # A query that fails leaves no table behind.
    assert "Conversion Error" in fails(conn, "CREATE TABLE bad AS SELECT CAST(kind AS INTEGER) AS k FROM e")
    assert ("bad",) not in rows(conn, "SHOW TABLES")


def test_views(events, server):
    conn = events
    run(conn, "CREATE VIEW va AS SELECT * FROM e WHERE kind = 'a'")
    run(conn, "CREATE VIEW vc AS SELECT count(*) AS c FROM va")
    assert rows(conn, "SELECT * FROM vc") == [(2,)]
    run(conn, "INSERT INTO e VALUES (4, 'a', 0.5)")
    assert rows(conn, "SELECT * FROM vc") == [(3,)]
    run(conn, "CREATE OR REPLACE VIEW va AS SELECT * FROM e WHERE kind = 'b'")
    assert rows(conn, "SELECT * FROM vc") == [(1,)]
    assert "would refer to itself" in fails(conn, "CREATE OR REPLACE VIEW va AS SELECT * FROM vc")
    assert "a view cannot take a table's name" in fails(conn, "CREATE VIEW e AS SELECT 1")

    objs = conn.adbc_get_objects(depth="tables").read_all().to_pylist()
    tables = {t["table_name"]: t["table_type"] for c in objs for s in c["catalog_db_schemas"] for t in s["db_schema_tables"]}
    assert tables == {"e": "TABLE", "va": "VIEW", "vc": "VIEW"}
    assert conn.adbc_get_table_types() == ["TABLE", "VIEW"]
    assert conn.adbc_get_table_schema("vc").names == ["c"]

    # Views are kept in the catalog: they survive a restart.
    conn.close()
    server.stop()
    server.start()
    import adbc_driver_flightsql.dbapi as flightsql
    with flightsql.connect(server.uri, autocommit=True) as c2:
        assert rows(c2, "SELECT * FROM vc") == [(1,)]
        run(c2, "DROP VIEW vc")
        assert rows(c2, "SHOW TABLES") == [("e",), ("va",)]


def test_show_and_describe_match_duckdb(events):
    conn = events
    run(conn, "CREATE DATABASE sales")
    run(conn, "CREATE TABLE sales.o (id BIGINT NOT NULL, region VARCHAR NOT NULL, PRIMARY KEY (region, id))")
    assert rows(conn, "SHOW DATABASES") == [("default",), ("sales",)]
    assert rows(conn, "SHOW TABLES") == [("e",)]
    assert rows(conn, "SHOW TABLES FROM sales") == [("o",)]
    # The shapes of DuckDB's own answers: the same column names and types,
    # and for a table the same rows as DuckDB gives for the same definition.
    ref = duckdb.connect()
    ref.execute("CREATE TABLE e (id BIGINT NOT NULL, kind VARCHAR, amount DOUBLE)")
    want = ref.sql("DESCRIBE e").to_arrow_table()
    got = run(conn, "DESCRIBE e")
    assert got.column_names == want.column_names
    assert [f.type for f in got.schema] == [pa.string()] * 6
    assert got.to_pylist() == want.to_pylist()
    assert run(conn, "SHOW TABLES").column_names == ref.sql("SHOW TABLES").to_arrow_table().column_names
    assert run(conn, "SHOW DATABASES").column_names == ref.sql("SHOW DATABASES").to_arrow_table().column_names
    assert rows(conn, "DESCRIBE sales.o") == [("id", "BIGINT", "NO", "PRI", None, None),
                                             ("region", "VARCHAR", "NO", "PRI", None, None)]
    assert rows(conn, "DESCRIBE SELECT 1 AS a") == [("a", "INTEGER", "YES", None, None, None)]


def test_duckdb_identifiers(events):
    conn = events
    # DuckDB 2.0 (the clients' duckdb) takes a keyword as an alias without
    # AS; the embedded DuckDB 1.5 is helped to.
    for sql in ["SELECT 1 share", "SELECT 1 share, 2 value, 'x' key", "SELECT count(*) total FROM default.e"]:
        assert rows(conn, sql) == duckdb_rows(sql), sql
    assert run(conn, "SELECT 1 share").column_names == ["share"]
    assert rows(conn, "SELECT count(*) FROM default.e") == [(3,)]


def duckdb_rows(sql):
    ref = duckdb.connect()
    ref.execute("CREATE SCHEMA IF NOT EXISTS \"default\"")
    ref.execute("CREATE TABLE \"default\".e AS SELECT * FROM (VALUES (1, 'a', 1.5), (2, 'b', 2.5), (3, 'a', 3.0)) t(id, kind, amount)")
    return [tuple(r) for r in ref.execute(sql.replace("default.e", "\"default\".e")).fetchall()]


def test_client_errors(events, server):
    conn = events
    msg = fails(conn, "SELECT * FROM nosuch")
    assert msg.startswith('NOT_FOUND: [FlightSQL] Binder Error: table "default.nosuch" does not exist (NotFound;'), msg
    msg = fails(conn, "DROP TABLE nosuch")
    assert msg.startswith('NOT_FOUND: [FlightSQL] table "default.nosuch" does not exist (NotFound;'), msg
    msg = fails(conn, "CREATE TABLE " + "x" * 200 + " (a INT)")
    assert msg.startswith("INVALID_ARGUMENT:") and "longer than the limit of 128 bytes" in msg
    assert "INVALID_ARGUMENT" in fails(conn, "SELECT * FROM lakestream_scan(NULL, NULL)")
    for m in [msg, fails(conn, 'CREATE TABLE "%%%" (a INT)')]:
        assert "/tmp" not in m and "INTERNAL" not in m
    # The ADBC Flight SQL driver (Go) formats the server's message as a
    # format string, so a % in it arrives mangled ('b%!'(MISSING)); the
    # server's own message is whole, as the Go Flight SQL client of
    # `lakestream sql` shows (docs/flight.md).
    out = subprocess.run([BIN, "sql", "--addr", f"127.0.0.1:{server.port}",
                          "SELECT * FROM changes('e', 'latest') WHERE kind LIKE 'b%'"], capture_output=True, text=True)
    assert out.returncode != 0 and "LIKE 'b%'\"" in out.stderr, out.stderr


def test_cli_command_tags(events, server):
    def cli(sql):
        return subprocess.run([BIN, "sql", "--addr", f"127.0.0.1:{server.port}", sql],
                              capture_output=True, text=True, check=True).stdout.strip()
    assert cli("INSERT INTO e VALUES (9, 'z', 0), (10, 'z', 0)") == "INSERT 2"
    assert cli("CREATE TABLE z AS SELECT * FROM e WHERE kind = 'z'") == "SELECT 2"
    assert cli("CREATE VIEW zv AS SELECT * FROM z") == "CREATE VIEW"
    assert cli("DROP VIEW zv") == "DROP VIEW"
