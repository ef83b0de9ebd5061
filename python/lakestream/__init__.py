"""Lakestream's Python package: a Spark data source (lakestream.spark) and
a subscription iterator (subscribe) over Arrow Flight SQL. docs/python.md
and docs/spark.md describe both."""
from ._client import Client, IdempotentWriter, writer_id
from ._subscribe import Position, subscribe
from ._version import __version__

__all__ = ["Client", "IdempotentWriter", "Position", "subscribe", "writer_id", "__version__"]
