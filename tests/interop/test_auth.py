"""Authentication and TLS with the real clients (docs/security.md): a node
with --auth on, a TLS certificate of a CA this test makes with openssl, and
ADBC (username/password over grpc+tls://), pyarrow.flight
(authenticate_basic_token), the JDBC driver (user/password,
useEncryption=true, the CA in a Java trust store) and HTTPS."""
import base64
import os
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from conftest import Server
from test_jdbc import check_smoke_output, jdbc_jar, run_smoke, smoke_classpath, ROWS  # noqa: F401 (fixtures)
from util import gen_rows, ingest, query

ADMIN_PASSWORD = "admin-password-for-tests"


def make_ca(d):
    """A CA and a server certificate for localhost and 127.0.0.1, by openssl."""
    if shutil.which("openssl") is None:
        pytest.skip("test_auth needs openssl on PATH to make its test CA")

    def run(*args):
        r = subprocess.run(["openssl", *args], capture_output=True, text=True, cwd=d)
        assert r.returncode == 0, r.stderr

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=lakestream test CA")
    run("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost")
    with open(os.path.join(d, "ext.cnf"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf")
    return {name: os.path.join(d, name) for name in ("ca.pem", "server.pem", "server.key")}


@pytest.fixture
def certs(tmp_path):
    d = tmp_path / "certs"
    d.mkdir()
    return make_ca(str(d))


@pytest.fixture
def tls_server(tmp_path, certs, monkeypatch):
    monkeypatch.setenv("LAKESTREAM_ADMIN_PASSWORD", ADMIN_PASSWORD)
    s = Server(tmp_path / "data", tmp_path / "server.log").start(
        "--auth", "on", "--tls-cert", certs["server.pem"], "--tls-key", certs["server.key"])
    yield s
    s.stop()


def tls_uri(server):
    return f"grpc+tls://localhost:{server.port}"


def adbc_connect(server, certs, user, password):
    import adbc_driver_flightsql.dbapi as flightsql
    from adbc_driver_flightsql import DatabaseOptions
    with open(certs["ca.pem"]) as f:
        ca = f.read()
    return flightsql.connect(tls_uri(server), db_kwargs={
        "username": user, "password": password, DatabaseOptions.TLS_ROOT_CERTS.value: ca}, autocommit=True)


def test_adbc_username_password_over_tls(tls_server, certs):
    admin = adbc_connect(tls_server, certs, "admin", ADMIN_PASSWORD)
    query(admin, "CREATE TABLE t (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ)")
    ingest(admin, "t", gen_rows(0, 100))
    query(admin, "CREATE USER alice WITH PASSWORD 'alice-password'")
    query(admin, "GRANT SELECT ON TABLE t TO alice")
    alice = adbc_connect(tls_server, certs, "alice", "alice-password")
    assert query(alice, "SELECT count(*) AS n FROM t").column("n").to_pylist() == [100]
    with pytest.raises(Exception, match="(?i)permission"):
        query(alice, "CREATE USER mallory WITH PASSWORD 'mallory-password'")
    # A password change revokes alice's token: her next call fails.
    query(admin, "ALTER USER alice WITH PASSWORD 'alice-password-2'")
    with pytest.raises(Exception, match="(?i)unauthenticated|revoked"):
        query(alice, "SELECT 1")
    alice.close()
    admin.close()
    with pytest.raises(Exception, match="(?i)unauthenticated|wrong user name or password"):
        adbc_connect(tls_server, certs, "alice", "alice-password")
    # The password never reaches the log.
    with open(tls_server.log_path) as f:
        log = f.read()
    assert "alice-password" not in log and ADMIN_PASSWORD not in log


def test_plaintext_client_refused(tls_server):
    import adbc_driver_flightsql.dbapi as flightsql
    with pytest.raises(Exception):
        c = flightsql.connect(f"grpc://127.0.0.1:{tls_server.port}",
                              db_kwargs={"username": "admin", "password": ADMIN_PASSWORD}, autocommit=True)
        query(c, "SELECT 1")


def test_pyarrow_flight_basic_token(tls_server, certs):
    with open(certs["ca.pem"], "rb") as f:
        client = fl.FlightClient(tls_uri(tls_server), tls_root_certs=f.read())
    with pytest.raises(fl.FlightUnauthenticatedError):
        list(client.list_flights())
    with pytest.raises(fl.FlightUnauthenticatedError):
        client.authenticate_basic_token("admin", "wrong-password")
    header = client.authenticate_basic_token("admin", ADMIN_PASSWORD)
    assert header[0].lower() == b"authorization" and header[1].startswith(b"Bearer ")
    opts = fl.FlightCallOptions(headers=[header])
    assert list(client.list_flights(options=opts)) == []
    client.close()


def test_https_needs_credentials(tls_server, certs):
    ctx = ssl.create_default_context(cafile=certs["ca.pem"])
    base = f"https://localhost:{tls_server.http_port}"
    with urllib.request.urlopen(base + "/healthz", context=ctx) as r:
        assert r.status == 200
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(base + "/metrics", context=ctx)
    assert e.value.code == 401 and "Basic" in e.value.headers.get("WWW-Authenticate", "")
    req = urllib.request.Request(base + "/metrics", headers={
        "Authorization": "Basic " + base64.b64encode(f"admin:{ADMIN_PASSWORD}".encode()).decode()})
    with urllib.request.urlopen(req, context=ctx) as r:
        assert r.status == 200 and b"lakestream_" in r.read()


def jdbc_tls_url(tls_server, certs, tmp_path):
    """The JDBC URL of tls_server, trusting the test CA through a trust
    store keytool makes; the caller appends the credentials."""
    if shutil.which("keytool") is None:
        pytest.skip("the JDBC TLS test needs keytool (a JDK) to make a trust store")
    store = str(tmp_path / "trust.jks")
    r = subprocess.run(["keytool", "-importcert", "-noprompt", "-alias", "lakestream-test-ca", "-file", certs["ca.pem"],
                        "-keystore", store, "-storepass", "changeit"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return (f"jdbc:arrow-flight-sql://localhost:{tls_server.port}?useEncryption=true&useSystemTrustStore=false"
            f"&trustStore={store}&trustStorePassword=changeit")


def events_for_smoke(admin, user, password):
    """Creates the table events, of ROWS rows, and user, who may read it and
    create the table the smoke creates; returns the rows."""
    query(admin, "CREATE TABLE events (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ) "
                 "WITH ('bucket.num'='4', 'bucket.key'='id', 'datalake.enabled'='false')")
    data = gen_rows(0, ROWS)
    ingest(admin, "events", data)
    query(admin, f"CREATE USER {user} WITH PASSWORD '{password}'")
    query(admin, f"GRANT SELECT ON TABLE events TO {user}")
    query(admin, f"GRANT CREATE ON DATABASE default TO {user}")  # the smoke creates a table
    return data


def test_jdbc_user_password_over_tls(tls_server, certs, smoke_classpath, tmp_path):
    url = jdbc_tls_url(tls_server, certs, tmp_path) + "&user=jdbc_user&password=jdbc-password"
    admin = adbc_connect(tls_server, certs, "admin", ADMIN_PASSWORD)
    data = events_for_smoke(admin, "jdbc_user", "jdbc-password")
    admin.close()
    r = run_smoke(smoke_classpath, url, "events")
    assert r.returncode == 0, f"Smoke failed:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    check_smoke_output(r.stdout, data)
    bad = url.replace("password=jdbc-password", "password=wrong-password")
    r = run_smoke(smoke_classpath, bad, "events")
    assert r.returncode != 0 and "UNAUTHENTICATED" in (r.stdout + r.stderr).upper()


def test_adbc_and_pyarrow_with_api_key(tls_server, certs):
    """A service authenticates with an API key sent as its bearer token
    (docs/security.md, "API keys"): shown once by CREATE API KEY, listed
    without the key by SHOW API KEYS, refused at the next call once
    dropped, audited, and never in the node's log."""
    import adbc_driver_flightsql.dbapi as flightsql
    from adbc_driver_flightsql import DatabaseOptions
    admin = adbc_connect(tls_server, certs, "admin", ADMIN_PASSWORD)
    query(admin, "CREATE TABLE k (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ)")
    ingest(admin, "k", gen_rows(0, 10))
    query(admin, "CREATE USER svc WITH PASSWORD 'svc-password-unused'")
    query(admin, "GRANT SELECT ON TABLE k TO svc")
    created = query(admin, "CREATE API KEY loader FOR USER svc VALID UNTIL '2099-01-01'")
    assert created.column_names == ["name", "user", "key", "valid_until"]
    row = created.to_pylist()[0]
    key = row["key"]
    assert row["name"] == "loader" and row["user"] == "svc" and key.startswith("lsk1_")
    assert row["valid_until"] == "2099-01-01T00:00:00Z"

    with open(certs["ca.pem"]) as f:
        ca = f.read()
    svc = flightsql.connect(tls_uri(tls_server), db_kwargs={
        DatabaseOptions.AUTHORIZATION_HEADER.value: "Bearer " + key,
        DatabaseOptions.TLS_ROOT_CERTS.value: ca}, autocommit=True)
    assert query(svc, "SELECT count(*) AS n FROM k").column("n").to_pylist() == [10]
    with pytest.raises(Exception, match="(?i)permission"):
        query(svc, "INSERT INTO k VALUES (99, 1.0, 'x', now())")
    listed = query(admin, "SHOW API KEYS").to_pylist()
    assert [(r["name"], r["user"]) for r in listed] == [("loader", "svc")]
    assert all(key not in str(v) for r in listed for v in r.values())

    # The command line sends $LAKESTREAM_API_KEY.
    from conftest import BIN
    cli = subprocess.run([BIN, "sql", "--addr", f"localhost:{tls_server.port}", "--tls-ca", certs["ca.pem"], "--format", "csv",
                          "SELECT count(*) AS n FROM k"], capture_output=True, text=True,
                         env={**os.environ, "LAKESTREAM_API_KEY": key})
    assert cli.returncode == 0 and cli.stdout.split() == ["n", "10"], cli.stdout + cli.stderr

    with open(certs["ca.pem"], "rb") as f:
        client = fl.FlightClient(tls_uri(tls_server), tls_root_certs=f.read())
    opts = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer " + key.encode())])
    assert [fi.descriptor.path for fi in client.list_flights(options=opts)] == [[b"default", b"k"]]

    # Revoked: the service's very next call is refused.
    query(admin, "DROP API KEY loader")
    with pytest.raises(Exception, match="(?i)unauthenticated|revoked"):
        query(svc, "SELECT 1")
    with pytest.raises(fl.FlightUnauthenticatedError):
        list(client.list_flights(options=opts))
    client.close()
    svc.close()

    events = query(admin, "SELECT kind, \"user\", statement, outcome FROM lakestream.audit "
                          "WHERE kind = 'api_key' ORDER BY time").to_pylist()
    assert [(e["statement"], e["outcome"]) for e in events] == [
        ("CREATE API KEY loader FOR USER svc VALID UNTIL '2099-01-01'", "ok"), ("DROP API KEY loader", "ok")]
    failed = query(admin, "SELECT outcome FROM lakestream.audit WHERE kind = 'login_failed'").column("outcome").to_pylist()
    assert any("revoked API key" in o for o in failed)
    admin.close()
    with open(tls_server.log_path) as f:
        assert key not in f.read()
    with open(os.path.join(tls_server.data_dir, "audit.jsonl")) as f:
        assert key not in f.read()


def test_jdbc_with_api_key(tls_server, certs, smoke_classpath, tmp_path):
    """The JDBC driver sends an API key given as token=… as its bearer token."""
    url = jdbc_tls_url(tls_server, certs, tmp_path)
    admin = adbc_connect(tls_server, certs, "admin", ADMIN_PASSWORD)
    data = events_for_smoke(admin, "jdbc_svc", "jdbc-svc-password")
    key = query(admin, "CREATE API KEY jdbc FOR USER jdbc_svc").to_pylist()[0]["key"]
    url += f"&token={key}"
    r = run_smoke(smoke_classpath, url, "events")
    assert r.returncode == 0, f"Smoke failed:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    check_smoke_output(r.stdout, data)
    query(admin, "DROP API KEY jdbc")
    admin.close()
    r = run_smoke(smoke_classpath, url, "events")
    assert r.returncode != 0 and "UNAUTHENTICATED" in (r.stdout + r.stderr).upper()
