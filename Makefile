# Lakestream. `make run` starts a node on the embedded defaults; `make test`
# runs every test, the Python client interop tests included, and each fuzz
# target for a few seconds. Everything they need is installed here: Go
# modules, and a Python virtualenv with pinned client packages in .venv. The
# JDBC smoke test also needs a JDK and Maven (it fetches the driver jar into
# .cache/jdbc once) and is skipped, saying so, without them. The Spark tests
# (pyspark from tests/requirements.txt reading the lake through Iceberg's
# JdbcCatalog) need Java 17 and the jars that `make spark-jars` fetches with
# Maven into .cache/spark once.

GO      ?= go
PYTHON  ?= python3
VENV    := .venv
PY      := $(VENV)/bin/python
BIN     := bin/lakestream
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

# Packages whose tests run with the race detector: the log, the server and
# everything concurrent under them.
RACE_PKGS := ./audit/... ./columnarlog/... ./tables/... ./flightsrv/... ./internal/... ./catalog/... ./node/... ./planner ./tiering/... ./cluster/... ./membership/...

.PHONY: all build run cluster-demo test test-go test-race test-py test-docs test-fuzz bench bench-full bench-lake bench-pk venv spark-jars fmt vet clean

all: build

# The first build compiles the embedded DuckDB (cgo) and takes minutes
# without a word from go build: say so before it starts.
build:
	@test -x $(BIN) || echo "Building $(BIN): the first build compiles the embedded DuckDB and takes a few minutes..."
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/lakestream

run: build
	./$(BIN) serve

# A 3-node cluster on this machine, with PostgreSQL as its metadata store
# (docs/cluster.md); Ctrl-C stops it.
cluster-demo: build
	BIN=$(BIN) scripts/cluster-demo.sh

test: vet test-go test-py test-fuzz

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt wants changes in:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# tests/adbcgo runs the server binary: LAKESTREAM_BIN points it at the one
# just built (without it, the test builds its own). -tags invariants turns on
# the run-time invariant checks (internal/invariants). ARROWMSG_PYTHON runs
# internal/arrowmsg's pyarrow interop test with the virtualenv's Python.
test-go: build venv
	ARROWMSG_PYTHON=$(CURDIR)/$(PY) $(GO) test -race -count=1 -timeout 30m -tags invariants $(RACE_PKGS)
	LAKESTREAM_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 30m -tags invariants $$($(GO) list ./... | grep -v -e /audit -e /columnarlog -e /tables -e /flightsrv -e /internal/ -e /catalog -e /node -e /tiering -e '/cluster$$' -e '/cluster/' -e /membership -e '/planner$$')

# The fuzz targets, package:target, each fuzzed for FUZZTIME on top of its
# seed corpus (which test-go runs as plain tests): about 50 seconds on 2
# cores with a warm build cache. -fuzz takes one target per go test. An
# input that fails is written to the package's testdata/fuzz/<target>/ and
# is a plain test case from then on.
FUZZTIME ?= 4s
FUZZ_TARGETS := ./columnarlog:FuzzBatch ./columnarlog:FuzzOpenSegment \
	./flightsrv:FuzzDecodeTicket ./flightsrv:FuzzPathTable ./catalog:FuzzParse \
	./planner:FuzzClassify ./planner:FuzzParseOffsets ./internal/arrowmsg:FuzzValidate \
	./internal/arrowmsg:FuzzValidateInput ./internal/rowenc:FuzzDecode \
	./cluster:FuzzDecodeFrames

test-fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; fn=$${t##*:}; \
	  echo "$(GO) test -run='^\$$' -fuzz='^$$fn\$$' -fuzztime=$(FUZZTIME) $$pkg"; \
	  $(GO) test -run='^$$' -fuzz="^$$fn\$$" -fuzztime=$(FUZZTIME) $$pkg; \
	done

# -rs prints why a test was skipped (test_jdbc.py without a JDK or Maven);
# test_jdbc.py fetches the JDBC driver into .cache/jdbc on its first run.
test-py: venv build spark-jars
	LAKESTREAM_BIN=$(CURDIR)/$(BIN) $(PY) -m pytest -q -rs --tb=native -p no:cacheprovider tests/interop

# The runnable code blocks of README.md and docs/*.md (those marked
# <!-- doctest -->) against a node the test starts; test-py runs them too.
test-docs: venv build
	LAKESTREAM_BIN=$(CURDIR)/$(BIN) $(PY) -m pytest -q -rs --tb=native -p no:cacheprovider tests/interop/test_docs.py

venv: $(VENV)/.installed $(VENV)/.lakestream

# The package of python/ (docs/python.md), installed again when it changes.
$(VENV)/.lakestream: $(VENV)/.installed python/pyproject.toml $(wildcard python/lakestream/*.py python/lakestream/*/*.py)
	$(VENV)/bin/pip install -q --disable-pip-version-check ./python
	touch $@

$(VENV)/.installed: tests/requirements.txt
	@echo "Creating $(VENV) with the pinned client packages of tests/requirements.txt (a minute or two)..."
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r tests/requirements.txt
	touch $@

# Spark reads the embedded lake (iceberg.db, SQLite) through Java Iceberg's
# JdbcCatalog: the Iceberg runtime for Spark 4.1 and the SQLite JDBC driver,
# from Maven Central into .cache/spark (git ignores it), fetched once.
# tests/interop/test_pk_lake.py puts every jar of .cache/spark on Spark's
# class path.
SPARK_CACHE := .cache/spark
SPARK_JARS := $(SPARK_CACHE)/iceberg-spark-runtime-4.1_2.13-1.11.0.jar $(SPARK_CACHE)/sqlite-jdbc-3.51.1.0.jar

spark-jars: $(SPARK_JARS)

$(SPARK_CACHE)/iceberg-spark-runtime-4.1_2.13-1.11.0.jar:
	mvn -q -B dependency:copy -Dartifact=org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.11.0 -DoutputDirectory=$(SPARK_CACHE)

$(SPARK_CACHE)/sqlite-jdbc-3.51.1.0.jar:
	mvn -q -B dependency:copy -Dartifact=org.xerial:sqlite-jdbc:3.51.1.0 -DoutputDirectory=$(SPARK_CACHE)

# The benchmark suite (docs/benchmarks.md): a node in-process against its
# baselines; prints a table and writes bench/out/results.{json,html}.
# bench is the quick version (8 to 12 minutes on 2 cores with every
# baseline, Fluss's subscription runs half of it; BENCH_FLAGS=-baselines=postgres,kafka
# about four), bench-full the larger one (about twenty minutes, four of them the lake
# workloads). bench leaves out the tiering workload (1,000 tiering rounds
# twice: two and a half minutes on its own); bench-full and bench-lake
# (tiering and union only, about three minutes) run it.
bench: build
	./$(BIN) bench -out bench/out -workloads ingest,scan,query,subscribe,union $(BENCH_FLAGS)

bench-lake: build
	./$(BIN) bench -out bench/out -workloads tiering,union

# bench-pk: the primary-key workload alone (docs/benchmarks.md, "Primary-key
# tables"): 10M upserts over 5M keys against PostgreSQL, then lookups and an
# aggregate over the state.
bench-pk: build
	./$(BIN) bench -out bench/out -workloads pk $(BENCH_FLAGS)

bench-full: build
	./$(BIN) bench -out bench/out -rows 10000000 -query-rows 10000000 -batch-rows 1024,8192,65536 -runs 5 -duration 20s $(BENCH_FLAGS)

clean:
	rm -rf bin $(VENV)
