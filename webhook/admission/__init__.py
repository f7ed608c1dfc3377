"""Admission: AdmissionReview decode/encode, JSON patches, mutation and validation policies, HTTP routes.

The policies are pure functions of the request and a read-only view of the cluster cache; the aiohttp routes
are thin (decode, call one policy, encode).
Must not: reach the API server on the request path (only the in-memory cache is read).
"""
