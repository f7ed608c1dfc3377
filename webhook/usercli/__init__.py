"""The user and admin commands of ``turnstile`` / ``kubectl turnstile``: queues, workloads, why, stop, resume.

``views`` turns objects (plain dicts as the API server sends them) into rows and reports, ``render`` turns those
into tables, JSON or YAML, and ``commands`` does the reading and writing through the ``Kube`` protocol.
"""
