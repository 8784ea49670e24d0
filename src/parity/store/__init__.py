"""The history: an index of every bundle and comparison, rebuildable from them, in SQLite
or PostgreSQL (``index``: the ``Store``; ``queries``: what ``ls``, ``show`` and ``trend``
read; ``schema``: the tables and migrations; ``engine``: where the index lives and how it
is reached; ``figures``: what is kept of each bundle)."""

from parity.store.engine import default_path, locate
from parity.store.index import Store, index_quietly
from parity.store.schema import SCHEMA_VERSION
from parity.store.walk import ReindexResult

__all__ = ["SCHEMA_VERSION", "ReindexResult", "Store", "default_path", "index_quietly", "locate"]
