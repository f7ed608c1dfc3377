"""Kueue's visibility API (``visibility.kueue.x-k8s.io``), served by Turnstile as an aggregated API server."""
