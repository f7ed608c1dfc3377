"""The reconciler: watches feeding the cache, the scheduling loop, status writers, eviction, leader election.

Must not: decide policy itself; it asks ``webhook.core`` and ``webhook.jobs``.
"""
