#!/bin/sh
# Starts a 3-node Lakestream cluster on this machine (docs/cluster.md,
# "A 3-node cluster on one machine"): a PostgreSQL server for the metadata
# store and the shared catalog (or $LAKESTREAM_META, a postgres:// URL of
# your own), then nodes n1, n2 and n3 on loopback ports. Ctrl-C stops the
# nodes one after the other with SIGTERM (each hands its leaderships off
# first), then PostgreSQL.
#
#   make cluster-demo                      # or: scripts/cluster-demo.sh
#   DEMO_DIR=/tmp/demo make cluster-demo   # keep the data directories there
set -eu

BIN=${BIN:-bin/lakestream}
DEMO_DIR=${DEMO_DIR:-$(mktemp -d -t lakestream-cluster-XXXXXX)}
PG_PORT=${PG_PORT:-55432}
mkdir -p "$DEMO_DIR"
PIDS=""
PG_DATA=""
AS_PG=""

stop_all() {
	trap - INT TERM EXIT
	for pid in $PIDS; do
		kill -TERM "$pid" 2>/dev/null && while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
	done
	if [ -n "$PG_DATA" ]; then
		$AS_PG "$PG_BIN/pg_ctl" -D "$PG_DATA" -m fast -w stop >/dev/null 2>&1 || true
	fi
	echo "stopped; data in $DEMO_DIR"
}
trap stop_all INT TERM EXIT

META=${LAKESTREAM_META:-}
if [ -z "$META" ]; then
	PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
	[ -x "${PG_BIN:-/nonexistent}/initdb" ] || PG_BIN=$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/initdb)")
	if [ ! -x "$PG_BIN/initdb" ] || [ ! -x "$PG_BIN/psql" ]; then
		echo "no PostgreSQL binaries (initdb) found: install PostgreSQL, or set LAKESTREAM_META=postgres://..." >&2
		exit 1
	fi
	PG_DATA=$DEMO_DIR/pg
	if [ "$(id -u)" = 0 ]; then # PostgreSQL refuses to run as root
		mkdir -p "$PG_DATA" && chown nobody "$DEMO_DIR" "$PG_DATA"
		AS_PG="runuser -u nobody --"
	fi
	if [ ! -f "$PG_DATA/PG_VERSION" ]; then
		$AS_PG "$PG_BIN/initdb" -D "$PG_DATA" -U postgres --auth=trust >/dev/null
	fi
	$AS_PG "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_DATA/server.log" -w \
		-o "-p $PG_PORT -k $PG_DATA -c listen_addresses=127.0.0.1" start >/dev/null
	if ! "$PG_BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -Atqc "SELECT 1 FROM pg_database WHERE datname = 'lakestream'" | grep -q 1; then
		"$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres lakestream
	fi
	META=postgres://postgres@127.0.0.1:$PG_PORT/lakestream?sslmode=disable
fi

start_node() { # id flight-port http-port gossip-port [join]
	mkdir -p "$DEMO_DIR/$1"
	join=""
	[ -n "${5:-}" ] && join="--join $5"
	# Each node in a session of its own: Ctrl-C reaches the script only, which
	# stops the nodes one at a time, so each hands its leaderships off.
	# shellcheck disable=SC2086
	setsid "$BIN" serve --data-dir "$DEMO_DIR/$1" --listen "127.0.0.1:$2" --http "127.0.0.1:$3" \
		--node-id "$1" --gossip "127.0.0.1:$4" --gossip-timing local --meta "$META" $join \
		>>"$DEMO_DIR/$1/node.log" 2>&1 &
	pid=$!
	PIDS="$PIDS $pid"
	until "$BIN" sql --addr "127.0.0.1:$2" "SELECT 1" >/dev/null 2>&1; do
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "node $1 did not start; the end of its log ($DEMO_DIR/$1/node.log):" >&2
			tail -20 "$DEMO_DIR/$1/node.log" >&2
			exit 1
		fi
		sleep 0.2
	done
}
start_node n1 31337 31380 7946
start_node n2 31338 31381 7947 127.0.0.1:7946
start_node n3 31339 31382 7948 127.0.0.1:7946

cat <<MSG
A 3-node cluster runs (data and logs in $DEMO_DIR):
  n1  Flight SQL 127.0.0.1:31337  status page http://127.0.0.1:31380/
  n2  Flight SQL 127.0.0.1:31338  status page http://127.0.0.1:31381/
  n3  Flight SQL 127.0.0.1:31339  status page http://127.0.0.1:31382/
metadata store and catalog: $META

Try:
  $BIN sql --addr 127.0.0.1:31337 "CREATE TABLE t (id BIGINT, v VARCHAR) WITH ('bucket.num' = '1')"
  $BIN sql --addr 127.0.0.1:31338 "SELECT * FROM lakestream.buckets"
  $BIN sql --addr 127.0.0.1:31339 "INSERT INTO t VALUES (1, 'a')"
    (any node takes writes: each bucket's rows go to its leader, docs/cluster.md)
  $BIN sql --addr 127.0.0.1:31339 "SELECT * FROM t"     (any node reads)
  $BIN cluster status --addr 127.0.0.1:31339
  $BIN cluster decommission --meta '$META' n3
Ctrl-C stops the cluster.
MSG
wait
