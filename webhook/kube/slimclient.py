"""The parts of kubernetes_asyncio that ``ApiServerKube`` uses, loaded without its generated API and model classes.

Owns: ``load()``, which returns the ``client`` and ``config`` modules. Importing any part of kubernetes_asyncio runs
its package's ``__init__``, which imports every one of its 65 API and 768 model classes: about 33 MiB and 0.25 s
per interpreter, and Turnstile runs three (the webhook process, its review worker and the reconciler). We never use
them: every request goes through ``ApiClient.call_api`` with ``_preload_content=False`` and the body goes to orjson.
So, unless kubernetes_asyncio is loaded already (then that one is used, whole), its two packages are entered in
``sys.modules`` as bare packages (their directory, not their ``__init__``), the four client modules the request
path needs are imported from them, and ``client.models`` is an empty module (the client only looks a model up when
it deserialises a typed response, which we never ask for).
Must not: be imported by anything but ``webhook.kube.apiserver``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path

_PACKAGE = "kubernetes_asyncio"


def _bare_package(name: str, directory: Path) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__path__ = [str(directory)]
    module.__package__ = name
    sys.modules[name] = module
    return module


def load() -> tuple[types.ModuleType, types.ModuleType]:
    """(kubernetes_asyncio.client, kubernetes_asyncio.config), the client without its generated classes."""
    if f"{_PACKAGE}.client" not in sys.modules:
        spec = importlib.util.find_spec(_PACKAGE)
        if spec is None or spec.origin is None:
            raise ImportError(f"{_PACKAGE} is not installed")
        root = Path(spec.origin).parent
        _bare_package(_PACKAGE, root)
        client = _bare_package(f"{_PACKAGE}.client", root / "client")
        sys.modules[f"{_PACKAGE}.client.models"] = types.ModuleType(f"{_PACKAGE}.client.models")
        for name in ("exceptions", "configuration", "rest", "api_client"):
            setattr(client, name, importlib.import_module(f"{_PACKAGE}.client.{name}"))
        client.ApiClient = client.api_client.ApiClient  # type: ignore[attr-defined]
        client.Configuration = client.configuration.Configuration  # type: ignore[attr-defined]
        client.ApiException = client.exceptions.ApiException  # type: ignore[attr-defined]
    return sys.modules[f"{_PACKAGE}.client"], importlib.import_module(f"{_PACKAGE}.config")
