# The pyiceberg side of the pklake workload (bench/pk_lake.go): run as
# python -c <this> <iceberg.db> <runs> <db.table>..., it reads each table of
# the node's embedded SQL catalog with scan().to_arrow() (position deletes
# applied), once to warm up and count its rows, then <runs> timed runs each,
# rotating which goes first, and prints {"rows": [...], "times": [[ms...]...]}.
import json
import sys
import time

from pyiceberg.catalog.sql import SqlCatalog

db, runs, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
cat = SqlCatalog("lakestream", uri=f"sqlite:///{db}")
tables = [cat.load_table(n) for n in names]
rows = [t.scan().to_arrow().num_rows for t in tables]
times = [[] for _ in tables]
for run in range(runs):
    for j in range(len(tables)):
        i = (run + j) % len(tables)
        tables[i] = cat.load_table(names[i])
        start = time.perf_counter()
        tables[i].scan().to_arrow()
        times[i].append((time.perf_counter() - start) * 1000)
json.dump({"rows": rows, "times": times}, sys.stdout)
