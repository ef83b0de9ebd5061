"""Compressed input stored as sent: pyarrow sends LZ4- or Zstandard-compressed
IPC bodies by plain Flight DoPut; a batch that goes whole to one bucket is
stored as sent, one that must be split is encoded by the node (docs/flight.md).
Either way the rows read back equal."""
import os

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from util import dir_bytes, gen_rows, query


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
@pytest.mark.parametrize("buckets", ["'bucket.num'='1'", "'bucket.num'='4', 'bucket.key'='id'"])
def test_compressed_put_reads_back_equal(server, conn, codec, buckets):
    query(conn, f"CREATE TABLE ev (id BIGINT NOT NULL, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ) WITH ({buckets})")
    client = fl.FlightClient(f"grpc://127.0.0.1:{server.port}")
    data = gen_rows(0, 20_000)
    opts = fl.FlightCallOptions(write_options=pa.ipc.IpcWriteOptions(compression=codec))
    writer, reader = client.do_put(fl.FlightDescriptor.for_path("ev"), data.schema, options=opts)
    writer.write_table(data, max_chunksize=5000)
    writer.done_writing()
    assert reader.read().to_pybytes() == b"20000"
    writer.close()

    info = client.get_flight_info(fl.FlightDescriptor.for_path("ev"))
    got = pa.concat_tables([client.do_get(ep.ticket).read_all() for ep in info.endpoints]).sort_by("id")
    for col in data.column_names:
        assert got.column(col).equals(data.column(col)), col
    proj = query(conn, "SELECT kind, id FROM ev").sort_by("id")
    assert proj.column("kind").equals(data.column("kind")) and proj.column("id").equals(data.column("id"))
    # What is stored is compressed: well below the raw Arrow bytes.
    disk = dir_bytes(os.path.join(server.data_dir, "tables"))
    assert disk < data.nbytes * 0.8, f"{disk} bytes stored for {data.nbytes} bytes of Arrow data"
