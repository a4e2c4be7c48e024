"""The config document itself: its content's sections and keys, the signed
envelope (``ConfigDocument``) and the content check (``check_content``).
How a process picks documents up and applies them: ``inference_protocol.config``."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from core.canonical import canonical_json
from core.vocabulary import Tier
from inference_protocol.signing import _b64, _unb64

CONFIG_FORMAT = 1


# The engines a document may name (inference_worker.engines.ENGINES: the worker
# checks its own registry too; a test pins the two together), besides a plug-in
# engine's "package.module:Class", which only the worker can import and check.
ENGINE_NAMES = ("llamacpp", "transformers", "upstream", "fixed_cost", "embeddings", "llamacpp_embeddings")
# A model's "scheduler" settings (inference_worker.requests.SchedulerConfig; a
# test pins the two together), applied live by every worker that serves it.
SCHEDULER_KEYS = ("max_batch_size", "max_batch_tokens", "max_wait_ms", "free_age_bound_s",
                  "batch_slot_share", "max_queue", "stats_window_s")
SCHEDULER_INTEGERS = ("max_batch_size", "max_batch_tokens", "max_queue")
RATE_LIMIT_KEYS = ("requests_per_min", "tokens_per_min")
# Capacity controller thresholds (inference_client.capacity), the names of the
# CAPACITY_* settings without their prefix, lower-cased.
CAPACITY_KEYS = ("nominal_tokens_per_s", "min_busy_fraction", "bucket_s", "headroom", "free_share",
                 "paid_reserve", "yellow_ratio", "red_ratio", "yellow_queue", "red_queue",
                 "reference_decay", "calm_periods", "ratio_margin", "recovery_step")
ZONES = ("green", "yellow", "red")
# Canary rollout thresholds (inference_client.control.rollout), ROLLOUT_* settings.
ROLLOUT_KEYS = ("window_s", "min_requests", "max_error_rate_delta", "max_p99_ratio",
                "ready_timeout_s")


class ConfigError(ValueError):
    """A document refused: ``problems`` names every one."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


# ---- documents -----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ConfigDocument:
    number: int
    parent: int | None
    content: dict[str, Any]
    created_at: str       # ISO 8601, UTC
    created_by: str
    reason: str = ""
    signature: str = ""   # base64 Ed25519 signature of signed_bytes()
    format: int = CONFIG_FORMAT

    def signed_bytes(self) -> bytes:
        body = dataclasses.asdict(self)
        del body["signature"]
        return canonical_json(body)

    def signed(self, private_b64: str) -> ConfigDocument:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        key = Ed25519PrivateKey.from_private_bytes(_unb64(private_b64))
        return dataclasses.replace(self, signature=_b64(key.sign(self.signed_bytes())))

    def verify(self, public_b64: str) -> None:
        """ConfigError unless the signature is this document's, by that key."""
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        if not self.signature:
            raise ConfigError([f"document {self.number} is unsigned"])
        try:
            Ed25519PublicKey.from_public_bytes(_unb64(public_b64)).verify(
                _unb64(self.signature), self.signed_bytes())
        except (InvalidSignature, ValueError):
            raise ConfigError([f"document {self.number}: the signature does not verify "
                               "with this node's public key"]) from None

    def to_json(self) -> bytes:
        return canonical_json(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, raw: bytes | str) -> ConfigDocument:
        try:
            data = json.loads(raw)
            if data.get("format") != CONFIG_FORMAT:
                raise ConfigError([f"document format {data.get('format')!r} is not {CONFIG_FORMAT}"])
            doc = cls(**data)
        except ConfigError:
            raise
        except (ValueError, TypeError, AttributeError) as exc:
            raise ConfigError([f"not a config document ({exc})"]) from None
        if not isinstance(doc.number, int) or not isinstance(doc.content, dict):
            raise ConfigError(["a document needs an integer number and an object content"])
        return doc


def _number(value: Any, path: str, problems: list[str], *, integer: bool = False) -> None:
    kinds = (int,) if integer else (int, float)
    if value is None:
        problems.append(f"{path}: missing")
    elif isinstance(value, bool) or not isinstance(value, kinds):
        problems.append(f"{path}: must be {'an integer' if integer else 'a number'}, not {value!r}")
    elif value < 0:
        problems.append(f"{path}: must not be negative ({value})")


def version_weight(entry: Any) -> Any:
    """A version's entry in "versions" is its weight, or {"weight": W, <options>}."""
    return entry.get("weight") if isinstance(entry, dict) else entry


def version_options(entry: Any) -> dict[str, Any]:
    """Engine options a version's entry overrides (a failing canary in tests, a
    new batch size...)."""
    return {k: v for k, v in entry.items() if k != "weight"} if isinstance(entry, dict) else {}


def check_content(content: Any, *, published: Callable[[str, str], bool] | None = None) -> list[str]:
    """Every problem of a document's content (empty: valid). ``published(model,
    version)`` says whether a model version exists (the control plane passes its
    database; nodes, which have none, trust the signature for that)."""
    problems: list[str] = []
    if not isinstance(content, dict):
        return ["content: must be an object"]
    unknown = sorted(set(content) - {"models", "rate_limits", "capacity", "rollout"})
    problems += [f"{k}: unknown section" for k in unknown]
    models = content.get("models")
    if not isinstance(models, dict) or not models:
        problems.append("models: must be an object naming at least one model")
        models = {}
    for name, spec in models.items():
        path = f"models.{name}"
        if not isinstance(spec, dict):
            problems.append(f"{path}: must be an object (an engine spec)")
            continue
        engine = spec.get("engine")
        if engine not in ENGINE_NAMES and not (isinstance(engine, str) and ":" in engine):
            problems.append(f"{path}.engine: unknown engine {engine!r}; expected one of "
                            f"{', '.join(ENGINE_NAMES)} or 'package.module:Class'")
        scheduler = spec.get("scheduler", {})
        if not isinstance(scheduler, dict):
            problems.append(f"{path}.scheduler: must be an object")
        else:
            for key, value in scheduler.items():
                if key not in SCHEDULER_KEYS:
                    problems.append(f"{path}.scheduler.{key}: unknown setting; expected one of "
                                    f"{', '.join(SCHEDULER_KEYS)}")
                else:
                    _number(value, f"{path}.scheduler.{key}", problems, integer=key in SCHEDULER_INTEGERS)
        versions = spec.get("versions")
        if versions is None:
            continue
        if not isinstance(versions, dict) or not versions:
            problems.append(f"{path}.versions: must be an object, version -> traffic weight")
            continue
        for version, entry in versions.items():
            if isinstance(entry, dict):  # {"weight": 10, <engine options for this version>...}
                bad_keys = sorted(set(entry) & {"engine", "checkpoint", "versions"})
                problems += [f"{path}.versions.{version}.{k}: not settable per version" for k in bad_keys]
            _number(version_weight(entry), f"{path}.versions.{version}", problems, integer=True)
            if published is not None and not published(name, version):
                problems.append(f"{path}.versions.{version}: {name}@{version} was never published")
        weights = [w for w in map(version_weight, versions.values())
                   if isinstance(w, int) and not isinstance(w, bool)]
        if len(weights) == len(versions) and sum(weights) != 100:
            problems.append(f"{path}.versions: weights sum to {sum(weights)}, not 100")
    limits = content.get("rate_limits")
    if not isinstance(limits, dict):
        problems.append("rate_limits: must be an object, tier -> limits")
        limits = {}
    for tier in Tier.values:
        entry = limits.get(tier)
        if not isinstance(entry, dict):
            problems.append(f"rate_limits.{tier}: missing")
            continue
        for key in RATE_LIMIT_KEYS:
            _number(entry.get(key), f"rate_limits.{tier}.{key}", problems, integer=True)
        extra = sorted(set(entry) - set(RATE_LIMIT_KEYS))
        problems += [f"rate_limits.{tier}.{k}: unknown limit" for k in extra]
    problems += [f"rate_limits.{t}: unknown tier" for t in sorted(set(limits) - set(Tier.values))]
    for section, keys in (("capacity", CAPACITY_KEYS), ("rollout", ROLLOUT_KEYS)):
        values = content.get(section)
        if not isinstance(values, dict):
            problems.append(f"{section}: must be an object")
            continue
        problems += [f"{section}.{k}: unknown setting" for k in sorted(set(values) - set(keys))]
        for key in keys:
            value = values.get(key)
            if key in ("headroom", "free_share"):
                if not isinstance(value, dict) or set(value) != set(ZONES):
                    problems.append(f"{section}.{key}: must name exactly the zones {', '.join(ZONES)}")
                else:
                    for zone in ZONES:
                        _number(value[zone], f"{section}.{key}.{zone}", problems)
            else:
                _number(value, f"{section}.{key}", problems)
    return problems
