"""Privileges with ADBC's username/password (docs/security.md,
"Authorization"): a user without a grant is refused, GRANT SELECT lets it
read, REVOKE refuses it again, and GetTables lists only what it may see;
GRANT and REVOKE are in the audit log; roles grant through roles."""
import pytest

from conftest import Server
from util import gen_rows, ingest, query

ADMIN_PASSWORD = "admin-password-for-grants"


@pytest.fixture
def auth_server(tmp_path, monkeypatch):
    monkeypatch.setenv("LAKESTREAM_ADMIN_PASSWORD", ADMIN_PASSWORD)
    s = Server(tmp_path / "data", tmp_path / "server.log").start("--auth", "on")
    yield s
    s.stop()


def connect(server, user, password):
    import adbc_driver_flightsql.dbapi as flightsql
    return flightsql.connect(server.uri, db_kwargs={"username": user, "password": password}, autocommit=True)


def table_names(conn):
    objs = conn.adbc_get_objects(depth="tables").read_all().to_pylist()
    return sorted(t["table_name"] for c in objs for s in (c["catalog_db_schemas"] or [])
                  for t in (s["db_schema_tables"] or []))


def test_grant_and_revoke_select(auth_server):
    admin = connect(auth_server, "admin", ADMIN_PASSWORD)
    query(admin, "CREATE TABLE t (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ)")
    query(admin, "CREATE TABLE secret (id BIGINT)")
    ingest(admin, "t", gen_rows(0, 50))
    query(admin, "CREATE USER alice WITH PASSWORD 'alice-password'")
    alice = connect(auth_server, "alice", "alice-password")

    with pytest.raises(Exception, match="(?i)permission denied for table"):
        query(alice, "SELECT count(*) AS n FROM t")
    with pytest.raises(Exception, match="(?i)permission denied"):
        query(alice, "SELECT * FROM t")  # a plain scan, served without the engine
    assert table_names(alice) == []

    query(admin, "GRANT SELECT ON TABLE t TO alice")
    assert query(alice, "SELECT count(*) AS n FROM t").column("n").to_pylist() == [50]
    assert query(alice, "SELECT * FROM t").num_rows == 50
    assert table_names(alice) == ["t"]
    assert table_names(admin) == ["secret", "t"]
    grants = query(alice, "SHOW GRANTS").to_pylist()
    assert {"grantee": "alice", "grantee_type": "user", "object_type": "table", "database": "default",
            "name": "t", "privileges": "SELECT"} in grants
    with pytest.raises(Exception, match="(?i)permission denied"):
        query(alice, "INSERT INTO t SELECT * FROM t")  # SELECT is not INSERT

    query(admin, "REVOKE SELECT ON TABLE t FROM alice")
    with pytest.raises(Exception, match="(?i)permission denied for table"):
        query(alice, "SELECT count(*) AS n FROM t")
    assert table_names(alice) == []
    # GRANT and REVOKE are privilege events of the audit log, which alice may not read.
    events = query(admin, "SELECT kind, \"user\", statement, outcome FROM lakestream.audit WHERE kind = 'privilege'").to_pylist()
    assert {"kind": "privilege", "user": "admin", "statement": "GRANT SELECT ON TABLE t TO alice", "outcome": "ok"} in events
    assert {"kind": "privilege", "user": "admin", "statement": "REVOKE SELECT ON TABLE t FROM alice", "outcome": "ok"} in events
    with pytest.raises(Exception, match="(?i)permission denied"):
        query(alice, "SELECT count(*) FROM lakestream.audit")
    alice.close()
    admin.close()


def test_roles(auth_server):
    admin = connect(auth_server, "admin", ADMIN_PASSWORD)
    query(admin, "CREATE TABLE t (id BIGINT)")
    query(admin, "INSERT INTO t VALUES (1), (2)")
    query(admin, "CREATE USER bob WITH PASSWORD 'bob-password'")
    query(admin, "CREATE ROLE readers")
    query(admin, "CREATE ROLE analysts")
    query(admin, "GRANT SELECT ON ALL TABLES IN DATABASE default TO readers")
    query(admin, "GRANT readers TO analysts")
    query(admin, "GRANT analysts TO bob")
    bob = connect(auth_server, "bob", "bob-password")
    assert query(bob, "SELECT count(*) AS n FROM t").column("n").to_pylist() == [2]
    with pytest.raises(Exception, match="(?i)permission denied"):
        query(bob, "CREATE ROLE mine")
    query(admin, "DROP ROLE readers")
    with pytest.raises(Exception, match="(?i)permission denied for table"):
        query(bob, "SELECT count(*) AS n FROM t")
    bob.close()
    admin.close()
