"""What an operator sees of a client's calls: a failed call's request id
reaches the ADBC client among the error's details and is the request_id of
the server's log line of the call; /status.json and `lakestream status`
show the tables (docs/operations.md)."""
import json
import subprocess
import urllib.request

import adbc_driver_manager
import pytest

from conftest import BIN


def test_request_id_in_adbc_error_details_and_server_log(server, conn):
    with conn.cursor() as cur:
        with pytest.raises(adbc_driver_manager.Error) as info:
            cur.execute("SELECT * FROM no_such_table")
    # The driver hands keys and values over as bytes.
    details = {(k.decode() if isinstance(k, bytes) else k): v for k, v in (info.value.details or [])}
    rid = details.get("lakestream-request-id")
    assert rid, f"no lakestream-request-id among the error details {details}"
    rid = rid.decode() if isinstance(rid, bytes) else rid
    assert len(rid) == 16
    # The status details hold it too, as a google.rpc.RequestInfo.
    assert rid.encode() in details["grpc-status-details-bin"], details
    with open(server.log_path) as f:
        lines = [l for l in f if f"request_id={rid}" in l]
    assert len(lines) == 1, f"server log lines of request {rid}: {lines}\n{server.tail()}"
    line = lines[0]
    # The DB-API cursor prepares the statement first: the call that fails is
    # CreatePreparedStatement.
    for want in ("request failed", "rpc=DoAction", "kind=prepare", "code=NotFound", "no_such_table", "peer=127.0.0.1:"):
        assert want in line, f"{want!r} not in {line!r}"


def test_status_json_and_cli(server, conn):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE obs (id BIGINT)")
        cur.execute("INSERT INTO obs SELECT range FROM range(1234)")
    with urllib.request.urlopen(f"http://127.0.0.1:{server.http_port}/status.json", timeout=10) as r:
        st = json.load(r)
    tables = {t["name"]: t for t in st["tables"]}
    assert tables["default.obs"]["rows"] == 1234
    out = subprocess.run([BIN, "status", "--http", f"127.0.0.1:{server.http_port}"],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    assert "default.obs" in out and "1,234" in out, out
