"""Names the dead-code check (``hack/lint/deadcode.sh``) must not report: used by frameworks, not by our code.

Each entry says why. Adding a name here is a claim that the code is alive; prefer deleting dead code.
"""

# ruff: noqa: B018, F821
# mypy: ignore-errors

# Fields of TypedDicts that describe wire formats (AdmissionReview, ConversionReview, owner references,
# label selectors, the visibility API's documents): they document what the API server sends, or what we send it,
# whether or not a rule reads them (ours are written as dict displays, which the check does not see).
_.apiVersion
_.controller
_.convertedObjects
_.creationTimestamp
_.dryRun
_.groupVersion
_.localQueueName
_.matchExpressions
_.matchLabels
_.oldObject
_.ownerReferences
_.patchType
_.positionInClusterQueue
_.positionInLocalQueue
_.singularName
_.subResource
_.userInfo
AdmissionRequestWire
_.sub_resource

# Parsed from ResourceFlavor.spec.topologyName (part of the typed view, validated, shown by the CLI later).
_.topology_name

# Parameters of protocols the runtime calls: __aexit__, ssl's SNI callback, signal handlers.
exc_type
tb
server_name
signum
frame

# asyncio.Protocol.connection_made, called by the event loop.
_.connection_made

# aiohttp's TCPSite keeps its asyncio server in _server (stop() closes it); our site subclass sets it.
_._server

# Compared as a whole (dataclass equality) to detect a changed certificate file.
_.mtime_ns
_.inode

# logging.Formatter.format, called by the logging module.
_.format

# kubernetes_asyncio.ApiClient.sanitize_for_serialization, overridden; call_api calls it.
_.sanitize_for_serialization

# A bare package module (webhook/kube/slimclient.py): the import system reads them.
_.__path__
_.__package__
