"""The only package that imports ``kubernetes_asyncio``.

Owns: a small client ``Protocol``, its real implementation (the in-memory fake lives in tests/doubles/), and the
translation of client exceptions into Turnstile's own error hierarchy.
Must not: leak client types upward.
"""
