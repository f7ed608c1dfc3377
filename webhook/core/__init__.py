"""Queueing and scheduling decisions as data.

Owns: queues and their ordering, flavor assignment, quota accounting across cohorts (borrowing and lending),
preemption, pending reasons. Given a snapshot and ``now`` it returns decisions.
Must not: do I/O, read the clock or the environment (time is passed in), import asyncio.
"""
