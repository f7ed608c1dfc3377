"""The only package that imports ``kubernetes_asyncio``.

Owns: a small client ``Protocol``, its real implementation, an in-memory fake for unit tests, and the
translation of client exceptions into Turnstile's own error hierarchy.
Must not: leak client types upward.
"""
