"""Typed views of our CRDs and of the Kubernetes objects Turnstile reads.

Owns: resource quantities with exact arithmetic, frozen value types for ResourceFlavor, ClusterQueue,
LocalQueue, Workload and WorkloadPriorityClass (parsed from either API version into the same values),
read-only views of the Kubernetes objects the job adapters read (``views``: Job, Pod, Workload as recorded),
label/annotation/condition constants, schema-level validation.
Must not: do I/O, read the clock or the environment, import asyncio, aiohttp or kubernetes_asyncio.
"""
