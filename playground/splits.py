"""A/B splits: a label may point at two or more versions with integer weights
(adding up to 100). A caller's `user` key picks one deterministically:

    bucket = int(sha256("<prompt id>:<label>:<user>").hexdigest()[:15], 16) % 100
    the first variant whose cumulative weight exceeds bucket

so each user stays on one version while the split holds (the SDK picks with the
same function, sdk/python/promptyard/splits.py). Without a key the pick is random
by weight."""

from __future__ import annotations

import hashlib
import secrets

from core.error_codes import DomainError

TOTAL_WEIGHT = 100
MAX_VARIANTS = 10
MAX_USER_KEY = 256


def split_bucket(*, prompt_id, label: str, user: str) -> int:
    digest = hashlib.sha256(f"{prompt_id}:{label}:{user}".encode()).hexdigest()
    return int(digest[:15], 16) % TOTAL_WEIGHT


def split_pick(split: list[dict], *, prompt_id, label: str, user: str | None) -> str:
    """The version id the split gives `user` (random by weight without one)."""
    bucket = (split_bucket(prompt_id=prompt_id, label=label, user=user) if user is not None
              else secrets.randbelow(TOTAL_WEIGHT))
    total = 0
    for variant in split:
        total += variant["weight"]
        if bucket < total:
            return variant["version"]
    return split[-1]["version"]


def check_user_key(user) -> str | None:
    if user is None:
        return None
    if not isinstance(user, str) or not user or len(user) > MAX_USER_KEY:
        raise DomainError(f"user must be a non-empty string of at most {MAX_USER_KEY} characters.",
                          code="invalid_user_key", field="user")
    return user


def check_variants(variants) -> list[dict]:
    """[{"version": id, "weight": int}, ...]: 2 to MAX_VARIANTS distinct versions,
    integer weights of at least 1 adding up to TOTAL_WEIGHT."""
    if not isinstance(variants, list) or not 2 <= len(variants) <= MAX_VARIANTS:
        raise DomainError(f"variants must be a list of 2 to {MAX_VARIANTS} {{version, weight}} objects.",
                          code="invalid_split", field="variants")
    out = []
    for i, v in enumerate(variants):
        if not isinstance(v, dict) or set(v) != {"version", "weight"}:
            raise DomainError(f"variants[{i}] must be an object with exactly 'version' and 'weight'.",
                              code="invalid_split", field=f"variants[{i}]")
        weight = v["weight"]
        if not isinstance(weight, int) or isinstance(weight, bool) or weight < 1:
            raise DomainError(f"variants[{i}].weight must be an integer of at least 1.",
                              code="invalid_weights",
                              field=f"variants[{i}].weight")
        out.append({"version": str(v["version"]), "weight": weight})
    total = sum(v["weight"] for v in out)
    if total != TOTAL_WEIGHT:
        raise DomainError(f"The weights add up to {total}, not {TOTAL_WEIGHT}.", code="invalid_weights",
                          field="variants", extra={"total": total})
    if len({v["version"] for v in out}) != len(out):
        raise DomainError("Each version may appear once in a split.", code="invalid_split", field="variants")
    return out
