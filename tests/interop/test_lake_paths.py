"""Partition values that need URL escaping, read from outside the node.

Iceberg's PartitionToPath URL-escapes a partition value in the path it puts
in a manifest (region=%C3%BC for ü). pyiceberg, Spark and DuckDB open that
path as written; iceberg-go URL-decodes it. Lakestream names partition
directories so that both read the same (region=~C3~BC, docs/lake.md,
"Paths"): pyiceberg must find every data and delete file its plan names, for
a log table and a primary-key table partitioned by a VARCHAR column holding
values such as ü, a space, a slash and a percent sign, and read exactly the
rows Lakestream serves."""
import os
import time

import pyarrow as pa
import pytest

from util import ingest, query

try:  # pinned in tests/requirements.txt; checked in a fixture so a missing one is reported, not a collection error
    import duckdb
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.manifest import DataFileContent
    _IMPORT_ERROR = None
except ImportError as e:  # pragma: no cover - depends on the venv
    _IMPORT_ERROR = e

IN_CI = os.environ.get("CI") == "true"

# Values PartitionToPath escapes: non-ASCII, a space, a slash, a percent
# sign, what looks like an escape already, URL delimiters, the '~' of
# Lakestream's own escapes; and a plain one.
REGIONS = ["ü", "a b", "a/b", "%", "a%2Fb", "x?y#z", "1+1=2", "~7E", "eu"]
OPTS = "'bucket.num'='2', 'bucket.key'='id', 'datalake.freshness'='300ms'"


@pytest.fixture(autouse=True)
def _lake_clients():
    if _IMPORT_ERROR is not None:
        msg = f"pyiceberg[sql-sqlite] / duckdb is missing from the test venv ({_IMPORT_ERROR})"
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)


def rows_of(regions, ids, amount):
    return pa.table({
        "region": pa.array([r for r in regions for _ in ids], pa.string()),
        "id": pa.array([i for _ in regions for i in ids], pa.int64()),
        "amount": pa.array([float(amount)] * (len(regions) * len(ids)), pa.float64()),
    })


def as_set(t):
    return sorted((r["region"], r["id"], r["amount"]) for r in t.to_pylist())


def wait_caught_up(conn, server, table, timeout=60):
    """Waits until every bucket of table is tiered up to its log end."""
    deadline = time.monotonic() + timeout
    st = []
    while time.monotonic() < deadline:
        st = query(conn, "SELECT bucket, tiered_offset, log_end_offset, last_error FROM lakestream.tiering "
                         "WHERE table_name = ?", (f"default.{table}",)).to_pylist()
        if st and all(r["tiered_offset"] == r["log_end_offset"] for r in st):
            assert all(r["last_error"] is None for r in st), st
            return
        time.sleep(0.1)  # polling the tiering state: there is no event to wait on
    pytest.fail(f"{table}: the lake did not catch up in {timeout} s: {st}\n{server.tail(20)}")


def as_written(uri):
    """The local path of a file:// URI, taken as written (pyiceberg's way)."""
    assert uri.startswith("file://"), f"{uri} is not in a file:// warehouse"
    return uri[len("file://"):]


def read_plan(tbl):
    """pyiceberg's plan of the current snapshot, read by DuckDB from the paths
    as written: each data file minus the positions its delete files name.
    Every path must name a file. Returns (rows, data file paths, delete files)."""
    db = duckdb.connect()
    rows, paths, deletes = [], [], set()
    for task in tbl.scan().plan_files():
        path = as_written(task.file.file_path)
        assert os.path.isfile(path), f"pyiceberg's plan names {task.file.file_path}: no such file"
        paths.append(path)
        dels = []
        for d in task.delete_files:
            assert d.content == DataFileContent.POSITION_DELETES, d
            assert os.path.isfile(as_written(d.file_path)), f"pyiceberg's plan names {d.file_path}: no such file"
            dels.append(as_written(d.file_path))
            deletes.add(d.file_path)
        sql = "SELECT region, id, amount FROM read_parquet(?, file_row_number = true, hive_partitioning = false) d"
        params = [path]
        if dels:
            sql += " WHERE NOT EXISTS (SELECT 1 FROM read_parquet(?) x WHERE x.file_path = ? AND x.pos = d.file_row_number)"
            params += [dels, task.file.file_path]
        rows += db.sql(sql, params=params).to_arrow_table().to_pylist()
    return sorted((r["region"], r["id"], r["amount"]) for r in rows), paths, deletes


def check_lake(server, conn, table, want):
    cat = SqlCatalog("lakestream", uri=f"sqlite:///{os.path.join(server.data_dir, 'iceberg.db')}")
    tbl = cat.load_table(f"default.{table}")
    got, paths, deletes = read_plan(tbl)
    assert got == want, f"{table}: DuckDB over pyiceberg's plan reads {len(got)} rows, want {len(want)}"
    assert as_set(tbl.scan().to_arrow()) == want, f"{table}: pyiceberg's scan"
    assert as_set(query(conn, f"SELECT region, id, amount FROM {table}")) == want, f"{table}: SELECT"
    # One directory per region, named with ~ escapes: no % in any path.
    for r in REGIONS:
        assert any(f"/region={escape(r)}/" in p for p in paths), f"{table}: no file of region {r!r} in {paths}"
    assert not [p for p in paths if "%" in p], paths
    return deletes


def escape(v):
    """Lakestream's escape of a path segment part (tiering/lakepath.go)."""
    keep = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
    return "".join(chr(b) if chr(b) in keep else f"~{b:02X}" for b in v.encode())


def test_log_table_partitions_need_escapes(server, conn):
    query(conn, f"CREATE TABLE lp (region VARCHAR, id BIGINT NOT NULL, amount DOUBLE) PARTITIONED BY (region) WITH ({OPTS})")
    want = []
    for round_ in range(2):
        t = rows_of(REGIONS, range(round_ * 20, round_ * 20 + 20), round_)
        ingest(conn, "lp", t)
        want += as_set(t)
        wait_caught_up(conn, server, "lp")
    check_lake(server, conn, "lp", sorted(want))


def test_pk_table_partitions_need_escapes(server, conn):
    query(conn, "CREATE TABLE pp (region VARCHAR, id BIGINT, amount DOUBLE, PRIMARY KEY (region, id)) "
                f"PARTITIONED BY (region) WITH ({OPTS})")
    state = {}

    def upsert(t):
        ingest(conn, "pp", t)
        for r in t.to_pylist():
            state[(r["region"], r["id"])] = r["amount"]

    upsert(rows_of(REGIONS, range(30), 1))
    wait_caught_up(conn, server, "pp")
    upsert(rows_of(REGIONS, range(10, 20), 2))
    cur = conn.cursor()
    cur.execute("DELETE FROM pp WHERE id % 7 = 0")
    cur.close()
    for k in [k for k in state if k[1] % 7 == 0]:
        del state[k]
    wait_caught_up(conn, server, "pp")
    deletes = check_lake(server, conn, "pp", sorted((r, i, a) for (r, i), a in state.items()))
    assert deletes, "the plan has no position delete file: the test shows nothing of them"
    assert not [d for d in deletes if "%" in d], deletes
