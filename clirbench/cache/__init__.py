"""On-disk caches: ``layout`` (the root and its sub-folders), ``shards`` (sealed, checksummed shard
files, quarantine, writer lock, ``cache verify|clean``), ``store`` (the content-addressed shard
store of the embedding caches), ``codecs`` (dense, sparse and token batches in a shard) and
``embeddings`` (the dense cache). The sparse and token caches live with their retrievers
(``retrievers/splade.py``, ``retrievers/colbert.py``); translations in ``translate/cache.py``.
"""
