"""Applying patches in memory exactly as the API server would: RFC 7386 merge and RFC 6902 JSON patch.

Owns: pure functions over JSON values, with which the fake client applies patches as the server would.
Must not: do I/O. Neither function changes its inputs.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch

from webhook.kube.errors import Invalid
from webhook.kube.objects import JsonPatch, MergePatch, Object


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, ``null`` deletes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


def apply_json_patch(target: Object, patch: JsonPatch) -> Object:
    """RFC 6902. A failed ``test`` or a bad path is ``Invalid`` (the server answers 422)."""
    try:
        result = jsonpatch.apply_patch(target, patch, in_place=False)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, KeyError, IndexError) as e:
        raise Invalid(f"422 Invalid: json patch failed: {e}", status=422, reason="Invalid") from e
    if not isinstance(result, dict):
        raise Invalid("422 Invalid: json patch replaced the whole object", status=422, reason="Invalid")
    return result


def apply_patch(target: Object, patch: MergePatch | JsonPatch, *, json_patch: bool) -> Object:
    if json_patch:
        if not isinstance(patch, list):
            raise Invalid("400 BadRequest: a json patch is a list of operations", status=400)
        return apply_json_patch(target, patch)
    if not isinstance(patch, dict):
        raise Invalid("400 BadRequest: a merge patch is an object", status=400)
    merged: Object = apply_merge_patch(target, patch)
    return merged
