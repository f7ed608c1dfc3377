"""Turnstile: Kueue-compatible job queueing for Kubernetes.

The package is split into layers whose imports point downward only (see DESIGN.md):
``api`` and ``core`` are pure; ``jobs`` and ``admission`` are pure policies over typed data;
``controller`` and ``kube`` do I/O; ``cli``, ``config``, ``pki``, ``tls``, ``metrics`` and
``local`` (the development cluster) are edges.
"""
