"""Kubernetes naming rules (DNS-1123 names, label keys and values), as pure checks returning what is wrong.

Each check returns an empty string when the value is fine, or a sentence saying what the value must look like.
"""

from __future__ import annotations

import re

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_CONDITION_REASON = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")

SUBDOMAIN_MAX = 253
LABEL_MAX = 63


def dns1123_subdomain(value: str) -> str:
    if len(value) > SUBDOMAIN_MAX:
        return f"must be no more than {SUBDOMAIN_MAX} characters"
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        return (
            "must be a lowercase RFC 1123 subdomain: lowercase letters, digits, '-' and '.', "
            "starting and ending with a letter or digit (e.g. 'team-a' or 'team-a.queue')"
        )
    return ""


def dns1123_label(value: str) -> str:
    if len(value) > LABEL_MAX:
        return f"must be no more than {LABEL_MAX} characters"
    if not _DNS1123_LABEL.fullmatch(value):
        return (
            "must be a lowercase RFC 1123 label: lowercase letters, digits and '-', "
            "starting and ending with a letter or digit (e.g. 'main')"
        )
    return ""


def qualified_name(value: str) -> str:
    """A label key or resource name: an optional DNS subdomain prefix and '/', then a name of up to 63 chars."""
    prefix, slash, name = value.rpartition("/")
    if slash:
        if not prefix:
            return "prefix part must be non-empty"
        if problem := dns1123_subdomain(prefix):
            return f"prefix part {problem}"
    if not name:
        return "name part must be non-empty"
    if len(name) > LABEL_MAX:
        return f"name part must be no more than {LABEL_MAX} characters"
    if not _QUALIFIED_NAME.fullmatch(name):
        return (
            "name part must consist of letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit (e.g. 'MyName' or 'example.com/my-name')"
        )
    return ""


def label_value(value: str) -> str:
    if len(value) > LABEL_MAX:
        return f"must be no more than {LABEL_MAX} characters"
    if not _LABEL_VALUE.fullmatch(value):
        return (
            "a label value must be empty or consist of letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    return ""


def condition_reason(value: str) -> str:
    if len(value) > 1024:
        return "must be no more than 1024 characters"
    if not _CONDITION_REASON.fullmatch(value):
        return "must start with a letter and contain only letters, digits, '_', ',' and ':'"
    return ""
