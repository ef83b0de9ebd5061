"""JDBC smoke test: tests/jdbc/Smoke.java with the Arrow Flight SQL JDBC driver
from Maven Central against a real node, over a table ingested here with ADBC.

The driver jar is fetched once with Maven into .cache/jdbc/ at the top of the
repository (git ignores it). The test needs java, javac and, until the jar is
cached, mvn; without them it is skipped with the reason shown by `make test`
(pytest -rs). A failed download fails the test.

The JDBC driver cannot read compressed Arrow IPC bodies (Arrow Java needs the
arrow-compression module, which the driver does not bundle), while scans send
the stored ZSTD/LZ4 batches as they are. The server sends them uncompressed to
this driver: on the lakestream-compression: none header (an unknown JDBC URL
property becomes a gRPC header of every call), or, without the header, for its
grpc-java user agent. See docs/flight.md and flightsrv/plain.go."""
import os
import shutil
import subprocess

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from util import gen_rows, ingest, query

JDBC_VERSION = os.environ.get("LAKESTREAM_JDBC_VERSION", "18.3.0")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CACHE = os.path.join(ROOT, ".cache", "jdbc")
SMOKE = os.path.join(ROOT, "tests", "jdbc", "Smoke.java")
ROWS = 3000


def _missing(*tools):
    return [t for t in tools if shutil.which(t) is None]


@pytest.fixture(scope="session")
def jdbc_jar():
    missing = _missing("java", "javac")
    if missing:
        pytest.skip(f"JDBC smoke test needs {' and '.join(missing)} on PATH (a JDK 11 or later)")
    jar = os.path.join(CACHE, f"flight-sql-jdbc-driver-{JDBC_VERSION}.jar")
    if os.path.exists(jar):
        return jar
    if _missing("mvn"):
        pytest.skip(f"JDBC smoke test needs mvn on PATH to fetch org.apache.arrow:flight-sql-jdbc-driver:{JDBC_VERSION} "
                    f"(or the jar in {CACHE})")
    os.makedirs(CACHE, exist_ok=True)
    r = subprocess.run(["mvn", "-q", "-B", "dependency:copy",
                        f"-Dartifact=org.apache.arrow:flight-sql-jdbc-driver:{JDBC_VERSION}",
                        f"-DoutputDirectory={CACHE}"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and os.path.exists(jar), \
        f"mvn could not fetch the JDBC driver {JDBC_VERSION}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return jar


@pytest.fixture(scope="session")
def smoke_classpath(jdbc_jar, tmp_path_factory):
    classes = tmp_path_factory.mktemp("jdbc-classes")
    r = subprocess.run(["javac", "-d", str(classes), "-cp", jdbc_jar, SMOKE], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"javac Smoke.java:\n{r.stdout}\n{r.stderr}"
    return os.pathsep.join([jdbc_jar, str(classes)])


def run_smoke(classpath, url, table):
    return subprocess.run(["java", "-Duser.timezone=UTC", "--add-opens=java.base/java.nio=ALL-UNNAMED",
                           "-cp", classpath, "Smoke", url, table],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def events(server, conn):
    """A ZSTD-compressed table in 4 buckets, filled through ADBC. It does not
    tier: its plain scans must forward the stored batches (a tiered table's
    are served by the engine, uncompressed)."""
    query(conn, "CREATE TABLE events (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ) "
                "WITH ('bucket.num'='4', 'bucket.key'='id', 'log.compression'='zstd', 'datalake.enabled'='false')")
    data = gen_rows(0, ROWS)
    for start in range(0, ROWS, 1000):
        ingest(conn, "events", data.slice(start, 1000))
    return data


def check_smoke_output(out, data):
    lines = [l.split("\t") for l in out.splitlines()]
    by_tag = {}
    for l in lines:
        by_tag.setdefault(l[0], []).append(l[1:])
    assert by_tag.get("meta") == [["Lakestream", "1"]], by_tag.get("meta")
    assert by_tag.get("created") == [["0"]]

    got = {int(r[0]): (float(r[1]), r[2], int(r[3])) for r in by_tag.get("row", [])}
    ts = data.column("ts").cast(pa.int64()).to_pylist()
    want = {i: (a, k, t) for i, a, k, t in zip(data.column("id").to_pylist(), data.column("amount").to_pylist(),
                                                data.column("kind").to_pylist(), ts)}
    assert len(by_tag.get("row", [])) == len(want), "SELECT * returned duplicate or missing rows"
    assert got == want, next(f"id {i}: JDBC read {got.get(i)}, ingested {want[i]}" for i in want if got.get(i) != want[i])

    agg = data.group_by("kind").aggregate([("id", "count"), ("amount", "sum")]).sort_by("kind")
    got_agg = [(r[0], int(r[1]), float(r[2])) for r in by_tag.get("agg", [])]
    want_agg = [(r["kind"], r["id_count"], r["amount_sum"]) for r in agg.to_pylist()]
    assert [g[:2] for g in got_agg] == [w[:2] for w in want_agg]
    for g, w in zip(got_agg, want_agg):
        assert g[2] == pytest.approx(w[2], rel=1e-12), g

    n = pc.sum(pc.and_(pc.greater(data["id"], 10), pc.equal(data["kind"], "buy"))).as_py()
    assert by_tag.get("param") == [[str(n)]]
    assert by_tag.get("ok") == [[str(ROWS)]]


@pytest.mark.parametrize("props", ["", "&lakestream-compression=none"],
                         ids=["user-agent fallback", "lakestream-compression header"])
def test_jdbc_smoke(server, events, smoke_classpath, props):
    url = f"jdbc:arrow-flight-sql://127.0.0.1:{server.port}?useEncryption=false{props}"
    r = run_smoke(smoke_classpath, url, "events")
    assert r.returncode == 0, f"Smoke failed ({url}):\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    check_smoke_output(r.stdout, events)
    assert server.proc.poll() is None, server.tail()


def test_jdbc_cannot_read_stored_compression(server, events, smoke_classpath):
    """What the plain path is for: asked for the stored (ZSTD) batches, the
    driver fails on the first one. This also shows that the header reaches
    the server's DoGet, where it overrides the user-agent fallback."""
    url = f"jdbc:arrow-flight-sql://127.0.0.1:{server.port}?useEncryption=false&lakestream-compression=stored"
    r = run_smoke(smoke_classpath, url, "events")
    assert r.returncode != 0, ("the JDBC driver read ZSTD-compressed batches: it gained compression support, "
                               "so the grpc-java fallback in flightsrv/plain.go may no longer be needed")
    assert "arrow-compression" in r.stdout + r.stderr, f"unexpected failure:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    # Refused client-side only; the node is fine (the same rows read plain
    # in test_jdbc_smoke).
    assert server.proc.poll() is None, server.tail()
