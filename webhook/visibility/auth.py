"""Who asks the visibility API, and whether they may: authentication and authorization delegated to the API server.

Owns: ``FrontProxy`` (the aggregation layer's client CA, allowed names and header names, as the API server
publishes them in ``kube-system/extension-apiserver-authentication``), ``identify`` (a request's user and groups,
trusted only when it came over a connection whose client certificate that CA verified and whose CN is allowed),
and ``SubjectAccessReviewer`` (one SubjectAccessReview per distinct question, remembered for a few seconds, as
Kubernetes' own delegating authorizer does).
Must not: serve HTTP or build responses.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from webhook.api.views import ConfigMap, ObjectLike, ObjectView, view_of
from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.resources import CONFIG_MAP, SUBJECT_ACCESS_REVIEW

log = logging.getLogger(__name__)

AUTHENTICATION_CONFIG_MAP: Final = ("kube-system", "extension-apiserver-authentication")
CACHE_SECONDS: Final = 10.0


class NotConfigured(Exception):
    """The API server publishes no front-proxy CA: it has no aggregation layer configured."""


@dataclass(frozen=True)
class FrontProxy:
    client_ca_pem: str
    allowed_names: tuple[str, ...] = ()  # empty: any certificate the CA signed
    username_headers: tuple[str, ...] = ("X-Remote-User",)
    group_headers: tuple[str, ...] = ("X-Remote-Group",)
    extra_prefixes: tuple[str, ...] = ("X-Remote-Extra-",)


def _names(data: Mapping[str, str], key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    raw = data.get(key)
    if not raw:
        return default
    try:
        parsed = json.loads(raw)
    except ValueError:
        return default
    return tuple(str(x) for x in parsed) if isinstance(parsed, list) else default


def front_proxy_from_config_map(config_map: ObjectLike) -> FrontProxy:
    data = view_of(ConfigMap, config_map).data
    ca = data.get("requestheader-client-ca-file", "")
    if not ca.strip():
        raise NotConfigured(
            "kube-system/extension-apiserver-authentication has no requestheader-client-ca-file: start the API "
            "server with --requestheader-client-ca-file and --proxy-client-cert-file (the aggregation layer)"
        )
    return FrontProxy(
        client_ca_pem=ca,
        allowed_names=_names(data, "requestheader-allowed-names", ()),
        username_headers=_names(data, "requestheader-username-headers", ("X-Remote-User",)),
        group_headers=_names(data, "requestheader-group-headers", ("X-Remote-Group",)),
        extra_prefixes=_names(data, "requestheader-extra-headers-prefix", ("X-Remote-Extra-",)),
    )


async def load_front_proxy(kube: Kube) -> FrontProxy:
    namespace, name = AUTHENTICATION_CONFIG_MAP
    try:
        config_map = await kube.get(CONFIG_MAP, name, namespace=namespace)
    except errors.NotFound:
        raise NotConfigured(f"{namespace}/{name} does not exist: the API server has no aggregation layer") from None
    return front_proxy_from_config_map(config_map)


@dataclass(frozen=True)
class Identity:
    user: str
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def common_name(peercert: Mapping[str, Any] | None) -> str | None:
    """The CN of a verified peer certificate as ``ssl`` reports it (``getpeercert()``), or None."""
    for rdn in (peercert or {}).get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None


def identify(
    headers: Mapping[str, str], *, peer_cn: str | None, trust: FrontProxy, all_headers: Sequence[tuple[str, str]] = ()
) -> Identity | None:
    """The user the front proxy vouches for; None when the connection is not the front proxy's or names no user.

    The TLS layer has already verified the client certificate against ``trust.client_ca_pem`` (or none was given:
    then ``peer_cn`` is None and nothing is trusted)."""
    if peer_cn is None or (trust.allowed_names and peer_cn not in trust.allowed_names):
        return None
    user = next((headers[h] for h in trust.username_headers if headers.get(h)), "")
    if not user:
        return None
    groups: list[str] = []
    extra: dict[str, list[str]] = {}
    for name, value in all_headers:
        lowered = name.lower()
        if any(lowered == g.lower() for g in trust.group_headers):
            groups.append(value)
            continue
        for prefix in trust.extra_prefixes:
            if lowered.startswith(prefix.lower()):
                extra.setdefault(lowered[len(prefix) :], []).append(value)
    return Identity(user, tuple(groups), {k: tuple(v) for k, v in extra.items()})


@dataclass(frozen=True)
class Attributes:
    """What a request does, as a SubjectAccessReview's resourceAttributes."""

    verb: str
    group: str
    version: str
    resource: str
    subresource: str
    name: str
    namespace: str = ""

    def describe(self) -> str:
        scope = f'in the namespace "{self.namespace}"' if self.namespace else "at the cluster scope"
        return f'cannot {self.verb} resource "{self.resource}/{self.subresource}" in API group "{self.group}" {scope}'


class SubjectAccessReviewer:
    """Asks the API server ``may this identity do that``; answers are remembered for ``ttl`` seconds."""

    def __init__(self, kube: Kube, *, ttl: float = CACHE_SECONDS, clock: Any = time.monotonic) -> None:
        self._kube = kube
        self._ttl = ttl
        self._clock = clock
        self._answers: dict[tuple[str, tuple[str, ...], Attributes], tuple[float, bool, str]] = {}

    async def allowed(self, who: Identity, what: Attributes) -> tuple[bool, str]:
        key = (who.user, who.groups, what)  # identities with extra fields are asked every time
        now = self._clock()
        known = self._answers.get(key)
        if known is not None and now - known[0] < self._ttl and not who.extra:
            return known[1], known[2]
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": who.user,
                "groups": list(who.groups),
                "extra": {k: list(v) for k, v in who.extra.items()},
                "resourceAttributes": {
                    "verb": what.verb,
                    "group": what.group,
                    "version": what.version,
                    "resource": what.resource,
                    "subresource": what.subresource,
                    "name": what.name,
                    **({"namespace": what.namespace} if what.namespace else {}),
                },
            },
        }
        answer = await self._kube.create(SUBJECT_ACCESS_REVIEW, review)
        result = ObjectView.of(answer).status
        allowed = bool(result.get("allowed")) and not result.get("denied")
        reason = str(result.get("reason") or "")
        if len(self._answers) > 10_000:
            self._answers.clear()  # bounded: a flood of distinct users cannot grow it without end
        self._answers[key] = (now, allowed, reason)
        return allowed, reason
