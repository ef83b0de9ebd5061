"""The SparkSession the Spark tests share: local, on loopback, without the
UI, in UTC, and the jars `make spark-jars` fetches (docs/spark.md).

A missing client package or jar fails a test in CI and skips it elsewhere
(need)."""
import glob
import os
import sys

import pytest

IN_CI = os.environ.get("CI") == "true"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPARK_JARS = os.path.join(ROOT, ".cache", "spark")


def need(what):
    """Fails (in CI) or skips (elsewhere) a test whose client package or tool is missing."""
    msg = f"{what} is missing: the test venv (tests/requirements.txt, `make venv`) and `make spark-jars` provide it"
    if IN_CI:
        pytest.fail(msg)
    pytest.skip(msg)


def iceberg_jars():
    """The Iceberg Spark runtime and SQLite JDBC jars, for a session whose
    catalogs are Java Iceberg's."""
    jars = sorted(glob.glob(os.path.join(SPARK_JARS, "*.jar")))
    names = " ".join(os.path.basename(j) for j in jars)
    if "iceberg-spark-runtime" not in names or "sqlite-jdbc" not in names:
        need(f"the Iceberg Spark runtime and SQLite JDBC jars in {SPARK_JARS} (found: {names or 'none'})")
    return jars


def session(app, master="local[1]", memory="768m", shuffle=1, jars=(), conf=None):
    """A SparkSession named app with the shared settings, then conf's. Its
    Python workers run this interpreter, so they import the lakestream
    package of this venv."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        need(f"pyspark ({e})")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    b = (SparkSession.builder.master(master).appName(app)
         .config("spark.driver.memory", memory)
         .config("spark.pyspark.python", sys.executable)
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.python.authenticate.socketTimeout", "120s")  # Python workers start slowly on a loaded machine
         .config("spark.sql.shuffle.partitions", str(shuffle))
         .config("spark.sql.session.timeZone", "UTC"))
    if jars:
        b = b.config("spark.jars", ",".join(jars))
    for k, v in (conf or {}).items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
