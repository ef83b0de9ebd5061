"""JDBC in the client matrix: tests/jdbc/ClientMatrix.java with the Arrow
Flight SQL JDBC driver (fetched as for test_jdbc.py) against a real node:
a query, prepared SELECTs with typed parameters of every basic type,
a prepared INSERT with addBatch, and the metadata JDBC tools read. The rows
it inserted are read back with ADBC and compared with DuckDB's answer for
the same INSERT with the same typed values.

What the driver does on its own, whatever the server sends, is pinned here
and documented in docs/flight.md ("JDBC"): isSigned is false and isNullable
columnNoNulls for every column, getTypeInfo has no rows (the driver answers
it without asking the server's GetXdbcTypeInfo), executeBatch reports one
count for the whole batch, and a parameter whose type the server cannot
know (SELECT ? AS x) cannot be bound."""
import datetime as dt
import os
import subprocess

import duckdb
import pytest

from test_jdbc import jdbc_jar  # noqa: F401 (fixture)
from typed import BASIC
from util import query

pytestmark = pytest.mark.filterwarnings("ignore:Arrow output on a DB-API result")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SOURCE = os.path.join(ROOT, "tests", "jdbc", "ClientMatrix.java")

# The values ClientMatrix.java binds (row 0 low, row 1 high): typed.py's,
# except where java.sql types hold milliseconds.
JDBC_VALUES = {b.name: (b.lo, b.hi) for b in BASIC}
JDBC_VALUES["time"] = (dt.time(0, 0, 1), dt.time(23, 59, 58))
JDBC_VALUES["timestamp"] = (dt.datetime(1970, 1, 1, 0, 0, 0, 1000), dt.datetime(2024, 2, 29, 12, 30, 0, 5000))
JDBC_VALUES["timestamptz"] = tuple(v.replace(tzinfo=dt.timezone.utc) for v in JDBC_VALUES["timestamp"])

# getColumnTypeName as the driver derives it from the Arrow type and the
# column metadata.
JDBC_TYPE_NAMES = {"bool": "BOOLEAN", "int8": "TINYINT", "int16": "SMALLINT", "int32": "INTEGER", "int64": "BIGINT",
                   "float": "FLOAT", "double": "DOUBLE", "decimal": "DECIMAL", "varchar": "VARCHAR",
                   "blob": "VARBINARY", "date": "DATE", "time": "TIME", "timestamp": "TIMESTAMP",
                   "timestamptz": "TIMESTAMP_WITH_TIMEZONE"}


@pytest.fixture(scope="module")
def matrix_classpath(jdbc_jar, tmp_path_factory):  # noqa: F811
    classes = tmp_path_factory.mktemp("jdbc-matrix")
    r = subprocess.run(["javac", "-d", str(classes), "-cp", jdbc_jar, SOURCE], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"javac ClientMatrix.java:\n{r.stdout}\n{r.stderr}"
    return os.pathsep.join([jdbc_jar, str(classes)])


def reference():
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    cols = ", ".join(f"c_{b.name} {b.sql}" for b in BASIC)
    con.execute(f"CREATE TABLE jm (id BIGINT, {cols})")
    for i in range(2):
        vals = [b.duck(JDBC_VALUES[b.name][i]) for b in BASIC]
        con.execute(f"INSERT INTO jm VALUES (?{', ?' * len(BASIC)})", [i] + vals)
    return con


def test_jdbc_client_matrix(server, conn, matrix_classpath):
    url = f"jdbc:arrow-flight-sql://127.0.0.1:{server.port}?useEncryption=false"
    r = subprocess.run(["java", "-Duser.timezone=UTC", "--add-opens=java.base/java.nio=ALL-UNNAMED",
                        "-cp", matrix_classpath, "ClientMatrix", url], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, f"ClientMatrix failed:\n{r.stdout[-3000:]}\n{r.stderr[-4000:]}"
    lines = {}
    for line in r.stdout.splitlines():
        tag, *rest = line.split("\t")
        lines.setdefault(tag, []).append(rest)
    assert lines["ok"] == [[]]

    ref = reference()
    # The prepared INSERT with addBatch wrote what DuckDB's INSERT of the
    # same typed values holds.
    got = query(conn, "SELECT * FROM jm ORDER BY id")
    want = ref.execute("SELECT * FROM jm ORDER BY id").to_arrow_table()
    assert [f.type for f in got.schema] == [f.type for f in want.schema]
    assert got.to_pylist() == want.to_pylist()
    assert lines["inserted"] == [["[2]"]], "executeBatch: the driver reports one count for the batch"

    # Typed parameters in WHERE and in expressions answer as DuckDB does.
    for name, ids in lines["where"]:
        b = next(b for b in BASIC if b.name == name)
        want = [r[0] for r in ref.execute(f"SELECT id FROM jm WHERE c_{name} = ? ORDER BY id",
                                          [b.duck(JDBC_VALUES[name][1])]).fetchall()]
        assert ids == ",".join(map(str, want)), name
    assert sorted(n for n, _ in lines["where"]) == sorted(b.name for b in BASIC)
    assert {n: v for n, v in lines["select"]} == {b.name: "true" for b in BASIC}
    assert lines["query"] == [["2", "1"]]

    # Result metadata: what the server's column metadata gives, and what the
    # driver decides itself (isSigned, isNullable).
    cols = {c[0]: c[1:] for c in lines["col"]}
    for b in BASIC:
        typ, prec, scale, signed, nullable, schema, table, ro, searchable, cs = cols[f"c_{b.name}"]
        assert typ == JDBC_TYPE_NAMES[b.name], (b.name, typ)
        assert (schema, table, ro, searchable) == ("default", "jm", "true", "true"), b.name
        assert cs == ("true" if b.name == "varchar" else "false"), b.name
        assert signed == "false" and nullable == "0", "the driver now reports isSigned/isNullable: update docs/flight.md"
    assert cols["c_decimal"][1:3] == ["9", "2"]
    assert cols["c_int64"][1:3] == ["19", "0"]
    assert cols["c_timestamptz"][1:3] == ["32", "6"]

    assert "typeinfo" not in lines, "getTypeInfo has rows now: the driver asks the server; update docs/flight.md"
    assert lines["nulltype"] == [["Can't set non-null value on NullVector"]]
    assert server.proc.poll() is None, server.tail()
