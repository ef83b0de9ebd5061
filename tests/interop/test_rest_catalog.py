"""The node's Iceberg REST catalog (docs/lake.md, "The REST catalog"), seen
from outside: Spark (iceberg-spark-runtime, catalog type rest) and
pyiceberg's RestCatalog, both pointed at http://<http-addr>/iceberg of a node
with --auth on, read every tiered table equal to `"t$lake"` read through
Flight SQL — a log table of many types, a table partitioned by day(ts), a
primary-key table whose lake has position deletes, a table in a second
database. A user sees only the tables it may SELECT, and writes are refused
saying to write through Lakestream."""
import base64
import datetime
import os
import time

import adbc_driver_flightsql.dbapi as flightsql
import pyarrow as pa
import pytest

from conftest import Server
from util import gen_rows, ingest, query
import sparkutil
from sparkutil import need

try:  # pinned in tests/requirements.txt
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.exceptions import ForbiddenError, NoSuchTableError
    _IMPORT_ERROR = None
except ImportError as e:  # pragma: no cover - depends on the venv
    _IMPORT_ERROR = e

ADMIN_PASSWORD = "admin-password-for-rest"


def basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    if _IMPORT_ERROR is not None:
        need(f"pyiceberg ({_IMPORT_ERROR})")
    d = tmp_path_factory.mktemp("restcat")
    os.environ["LAKESTREAM_ADMIN_PASSWORD"] = ADMIN_PASSWORD
    try:
        s = Server(d / "data", d / "server.log").start("--auth", "on")
    finally:
        del os.environ["LAKESTREAM_ADMIN_PASSWORD"]
    yield s
    s.stop()


def connect(node, user="admin", password=ADMIN_PASSWORD):
    return flightsql.connect(node.uri, db_kwargs={"username": user, "password": password}, autocommit=True)


TABLES = ["default.ev", "default.daily", "default.kv", "sales.orders"]


@pytest.fixture(scope="module")
def loaded(node):
    """The tables, loaded and tiered (lag 0 in every bucket); alice may
    SELECT default.ev only."""
    c = connect(node)
    fresh = "'datalake.freshness'='1s'"
    for sql in [
        f"CREATE TABLE ev (id BIGINT, n INTEGER, amount DOUBLE, kind VARCHAR, ok BOOLEAN, d DATE, ts TIMESTAMPTZ, price DECIMAL(10,2)) WITH ('bucket.num'='3', {fresh})",
        f"CREATE TABLE daily (id BIGINT, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ) PARTITIONED BY (day(ts)) WITH ({fresh})",
        f"CREATE TABLE kv (id BIGINT NOT NULL, v BIGINT, s VARCHAR, PRIMARY KEY (id)) WITH ('bucket.num'='2', {fresh})",
        "CREATE DATABASE sales",
        f"CREATE TABLE sales.orders (id BIGINT, total DOUBLE) WITH ({fresh})",
        "INSERT INTO ev SELECT range, (range % 1000)::INTEGER, range * 0.5, 'k' || (range % 7), range % 2 = 0, DATE '2024-01-01' + (range % 90)::INTEGER,"
        " TIMESTAMPTZ '2024-03-01 00:00:00+00' + INTERVAL (range) SECOND, (range % 10000) / 100.0 FROM range(20000)",
        "INSERT INTO ev VALUES (20000, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
        "INSERT INTO kv SELECT range, range, 's' || range FROM range(5000)",
        "INSERT INTO sales.orders SELECT range, range * 1.5 FROM range(1000)",
        "CREATE USER alice WITH PASSWORD 'alice-password'",
        "GRANT SELECT ON TABLE ev TO alice",
    ]:
        query(c, sql)
    ingest(c, "daily", gen_rows(0, 10000).set_column(3, "ts", pa.array(
        [datetime.datetime(2024, 3, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(minutes=7 * i) for i in range(10000)],
        type=pa.timestamp("us", tz="UTC"))))
    # Updates and deletes of keys already in the lake: position deletes.
    wait_tiered(c, node, "default.kv")
    query(c, "UPDATE kv SET v = -v, s = 'u' WHERE id % 3 = 0")
    query(c, "DELETE FROM kv WHERE id % 5 = 0")
    for t in TABLES:
        wait_tiered(c, node, t)
    yield c
    c.close()


def wait_tiered(c, node, table, timeout=60):
    deadline = time.monotonic() + timeout
    st = []
    while time.monotonic() < deadline:
        st = [r for r in query(c, "SELECT * FROM lakestream.tiering").to_pylist() if r["table_name"] == table]
        if st and sum(r["tiered_offset"] for r in st) > 0 and all(r["lag_rows"] == 0 for r in st):
            return
        time.sleep(0.2)  # polling the tiering state: there is no event to wait on
    pytest.fail(f"{table}: lake did not catch up in {timeout} s: {st}\n{node.tail(30)}")


def lake_rows(c, table):
    db, name = table.split(".")
    return query(c, f'SELECT * FROM {db}."{name}$lake"')


def canon(v):
    """A value as every reader's Python form compares: timestamps in UTC
    without a zone, decimals and floats as they are."""
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return v
    return v


def rows_of(records, names):
    return sorted((tuple(canon(r[n]) for n in names) for r in records), key=repr)


def same(got, want, what):
    assert len(got) == len(want), f"{what}: {len(got)} rows, t$lake has {len(want)}"
    for g, w in zip(got, want):
        assert g == w, f"{what}: first difference: got {g}, want {w}"


def rest_catalog(node, user, password):
    """pyiceberg's RestCatalog on the node, logging in with Basic credentials
    (a bearer token works too: token=...)."""
    return RestCatalog("lakestream", uri=f"http://127.0.0.1:{node.http_port}/iceberg",
                       auth={"type": "basic", "basic": {"username": user, "password": password}})


def test_pyiceberg_reads_every_tiered_table_as_lake(node, loaded):
    cat = rest_catalog(node, "admin", ADMIN_PASSWORD)
    assert sorted(ns[0] for ns in cat.list_namespaces()) == ["default", "sales"]
    listed = sorted(".".join(i) for ns in ("default", "sales") for i in cat.list_tables(ns))
    assert listed == sorted(TABLES)
    for t in TABLES:
        want = lake_rows(loaded, t)
        names = want.column_names
        got = cat.load_table(t).scan().to_arrow()
        assert got.column_names == names, t
        same(rows_of(got.to_pylist(), names), rows_of(want.to_pylist(), names), f"pyiceberg {t}")


@pytest.fixture(scope="module")
def spark(node):
    data = os.path.realpath(node.data_dir)
    cat = "spark.sql.catalog.lake"
    jdbc = "spark.sql.catalog.lakestream"  # JdbcCatalog, which writes: the other engine of the last tests (its name is the SQL catalog's)
    spark = sparkutil.session("rest-catalog", jars=sparkutil.iceberg_jars(), conf={
        cat: "org.apache.iceberg.spark.SparkCatalog",
        f"{cat}.type": "rest",
        f"{cat}.uri": f"http://127.0.0.1:{node.http_port}/iceberg",
        f"{cat}.header.Authorization": basic("admin", ADMIN_PASSWORD),
        f"{cat}.cache-enabled": "false",
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        jdbc: "org.apache.iceberg.spark.SparkCatalog",
        f"{jdbc}.catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
        f"{jdbc}.uri": f"jdbc:sqlite:{data}/iceberg.db",
        f"{jdbc}.jdbc.schema-version": "V1",
        f"{jdbc}.warehouse": f"file://{data}/warehouse",
        f"{jdbc}.cache-enabled": "false",
    })
    yield spark
    spark.stop()


def test_spark_reads_every_tiered_table_as_lake(loaded, spark):
    assert sorted(r[0] for r in spark.sql("SHOW NAMESPACES IN lake").collect()) == ["default", "sales"]
    assert sorted(r.tableName for r in spark.sql("SHOW TABLES IN lake.default").collect()) == ["daily", "ev", "kv"]
    for t in TABLES:
        want = lake_rows(loaded, t)
        names = want.column_names
        df = spark.table(f"lake.{t}")
        assert df.columns == names, t
        same(rows_of([r.asDict() for r in df.collect()], names), rows_of(want.to_pylist(), names), f"Spark {t}")
    # A write through the REST catalog is refused, saying where to write.
    with pytest.raises(Exception, match="read-only"):
        spark.sql("INSERT INTO lake.default.ev (id) VALUES (-1)").collect()
    with pytest.raises(Exception, match="read-only"):
        spark.sql("CREATE TABLE lake.default.fresh (x BIGINT) USING iceberg").collect()


def test_a_user_sees_only_what_it_may_select(node, loaded):
    cat = rest_catalog(node, "alice", "alice-password")
    assert [ns[0] for ns in cat.list_namespaces()] == ["default"]
    assert [".".join(i) for i in cat.list_tables("default")] == ["default.ev"]
    with pytest.raises(NoSuchTableError):
        cat.load_table("default.kv")
    assert cat.load_table("default.ev").scan().to_arrow().num_rows == lake_rows(loaded, "default.ev").num_rows
    with pytest.raises(Exception, match="(?i)unauthorized|401|password"):
        rest_catalog(node, "alice", "wrong").list_namespaces()


def test_pyiceberg_writes_are_refused(node, loaded):
    cat = rest_catalog(node, "admin", ADMIN_PASSWORD)
    tbl = cat.load_table("default.ev")
    with pytest.raises(ForbiddenError, match="read-only.*through it"):
        tbl.append(tbl.scan(limit=1).to_arrow())
    with pytest.raises(ForbiddenError, match="read-only"):
        cat.drop_table("default.ev")
    assert lake_rows(loaded, "default.ev").num_rows == 20001


# ---------------------------------------------------------------- another engine writing to the lake
# (docs/lake.md, "Other engines and the lake"): Spark through Iceberg's
# JdbcCatalog on the node's iceberg.db, which, unlike the REST catalog,
# lets it commit.

def count(c, sql):
    return query(c, sql).column(0)[0].as_py()


def wait_for(what, check, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.2)  # polling the node's state: there is no event to wait on
    pytest.fail(f"{what}: not within {timeout} s")


def last_error(c, table):
    rows = [r for r in query(c, "SELECT * FROM lakestream.tiering").to_pylist() if r["table_name"] == table]
    return rows[0]["last_error"] if rows else None


def test_spark_append_is_never_merged(node, loaded, spark):
    c = loaded
    query(c, "CREATE TABLE ext_a (id BIGINT, v VARCHAR) WITH ('bucket.num'='2', 'datalake.freshness'='1s')")
    query(c, "INSERT INTO ext_a SELECT range, 'v' || range FROM range(1000)")
    wait_tiered(c, node, "default.ext_a")
    mine = rest_catalog(node, "admin", ADMIN_PASSWORD).load_table("default.ext_a").current_snapshot().snapshot_id
    # The failure: Spark appends the lake's own rows again.
    spark.sql("INSERT INTO lakestream.default.ext_a SELECT * FROM lakestream.default.ext_a").collect()
    assert spark.table("lakestream.default.ext_a").count() == 2000
    query(c, "INSERT INTO ext_a SELECT range, 'v' || range FROM range(1000, 1100)")
    err = wait_for("the round to refuse the foreign snapshot",
                   lambda: (e := last_error(c, "default.ext_a")) and "not written by Lakestream" in e and e)
    assert "rollback_to_snapshot" in err and str(mine) in err, err
    # Not merged: every id once, the new ones from the log.
    assert count(c, "SELECT count(*) FROM ext_a") == 1100
    assert count(c, "SELECT count(DISTINCT id) FROM ext_a") == 1100
    assert count(c, 'SELECT count(*) FROM "ext_a$lake"') == 1000
    # Rolled back as the error says, tiering goes on.
    spark.sql(f"CALL lakestream.system.rollback_to_snapshot('default.ext_a', {mine})").collect()
    wait_for("tiering after the rollback", lambda: count(c, 'SELECT count(*) FROM "ext_a$lake"') == 1100)
    assert last_error(c, "default.ext_a") in (None, "")
    assert count(c, "SELECT count(*) FROM ext_a") == 1100


def test_spark_rewrite_and_expire_never_fail_reads(node, loaded, spark):
    c = loaded
    query(c, "CREATE TABLE ext_m (id BIGINT, v VARCHAR) WITH ('bucket.num'='2', 'datalake.freshness'='1s')")
    for i in range(4):
        query(c, f"INSERT INTO ext_m SELECT range, 'v' || range FROM range({i * 1000}, {(i + 1) * 1000})")
        wait_tiered(c, node, "default.ext_m")
    assert count(c, 'SELECT count(*) FROM "ext_m$lake"') == 4000
    spark.sql("CALL lakestream.system.rewrite_data_files(table => 'default.ext_m', options => map('min-input-files', '2'))").collect()
    spark.sql("CALL lakestream.system.expire_snapshots(table => 'default.ext_m', older_than => current_timestamp(), retain_last => 1)").collect()
    # The snapshot the node had read is gone with its files: reads reload.
    assert count(c, "SELECT count(*) FROM ext_m") == 4000
    assert count(c, "SELECT count(DISTINCT id) FROM ext_m") == 4000
    assert count(c, 'SELECT count(*) FROM "ext_m$lake"') == 4000
    query(c, "INSERT INTO ext_m SELECT range, 'w' FROM range(4000, 4100)")
    wait_tiered(c, node, "default.ext_m")
    assert count(c, 'SELECT count(*) FROM "ext_m$lake"') == 4100
    assert last_error(c, "default.ext_m") in (None, "")
