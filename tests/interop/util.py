"""Helpers shared by the interop tests."""
import numpy as np
import pyarrow as pa


def gen_rows(start, n, seed=7):
    """Deterministic event rows: id, amount, kind, ts."""
    rng = np.random.default_rng(seed + start)
    ids = np.arange(start, start + n, dtype=np.int64)
    kinds = np.array(["click", "view", "buy", "return", "ship", "cancel", "refund", "löschen"])
    return pa.table({
        "id": pa.array(ids),
        "amount": pa.array(rng.random(n) * 1000.0),
        "kind": pa.array(kinds[rng.integers(0, len(kinds), n)], type=pa.string()),
        "ts": pa.array((1_700_000_000_000_000 + ids * 1000).astype("datetime64[us]"), type=pa.timestamp("us", tz="UTC")),
    })


def query(conn, sql, params=None):
    cur = conn.cursor()
    try:
        cur.execute(sql, params)
        return cur.fetch_arrow_table()
    finally:
        cur.close()


def ingest(conn, table, data, mode="append"):
    cur = conn.cursor()
    try:
        return cur.adbc_ingest(table, data, mode=mode)
    finally:
        cur.close()


def dir_bytes(path):
    import os
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(root, f))
    return total
