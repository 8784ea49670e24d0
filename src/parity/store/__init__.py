"""The history: an SQLite index of every bundle and comparison, rebuildable from them
(``index``: the ``Store``; ``schema``: the tables and where the index lives; ``figures``:
what is kept of each bundle)."""

from parity.store.index import ReindexResult, Store, index_quietly
from parity.store.schema import SCHEMA_VERSION, default_path

__all__ = ["SCHEMA_VERSION", "ReindexResult", "Store", "default_path", "index_quietly"]
