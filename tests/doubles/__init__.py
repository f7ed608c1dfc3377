"""Test doubles of our own boundaries: the in-memory ``Kube`` fake and scripted faults. Never shipped."""
