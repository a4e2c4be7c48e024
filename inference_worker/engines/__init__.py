"""Engine registry: settings name an engine kind and its options per model.

    build_engine("smollm2", {"engine": "llamacpp", "n_seq_max": 16})

Engine modules are imported lazily: a worker serving an upstream model must
not need torch or llama-cpp-python installed, and importing torch costs
seconds. A kind written ``package.module:Class`` names an engine outside this
package (an Engine subclass on the worker's path), as vLLM's plugins do.
"""

from __future__ import annotations

import importlib
import inspect

from .base import Engine, EngineLoadError

ENGINES: dict[str, str] = {
    "llamacpp": "inference_worker.engines.llamacpp:LlamaCppEngine",
    "transformers": "inference_worker.engines.transformers_engine:TransformersEngine",
    "upstream": "inference_worker.engines.upstream:UpstreamEngine",
    "fixed_cost": "inference_worker.engines.fixed_cost:FixedCostEngine",
    "embeddings": "inference_worker.engines.embeddings:EmbeddingEngine",
    "llamacpp_embeddings": "inference_worker.engines.llamacpp_embeddings:LlamaCppEmbeddingEngine",
}


def engine_class(kind: str) -> type[Engine]:
    target = ENGINES.get(kind, kind)
    module, _, name = target.partition(":")
    if not name:
        raise EngineLoadError(f"unknown engine {kind!r}; expected one of "
                              f"{', '.join(sorted(ENGINES))} or 'package.module:Class'")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise EngineLoadError(f"cannot import engine {kind!r}: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, Engine)):
        raise EngineLoadError(f"engine {kind!r} is not an Engine subclass")
    return cls


def build_engine(name: str, spec: dict) -> Engine:
    """Build the engine for model ``name`` from its settings entry.

    ``spec["engine"]`` picks the kind; every other key is passed to the
    engine's constructor as a keyword. Any failure to build (unknown kind,
    unknown option, model that will not load) is an ``EngineLoadError``, so
    the worker refuses to start rather than serving a broken model.
    """
    if not isinstance(spec, dict) or "engine" not in spec:
        raise EngineLoadError(f"model {name!r}: spec must be a dict with an 'engine' key")
    options = {k: v for k, v in spec.items() if k != "engine"}
    cls = engine_class(spec["engine"])
    params = inspect.signature(cls).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    unknown = sorted(set(options) - set(params)) if not takes_any else []
    if unknown:
        raise EngineLoadError(
            f"model {name!r}: engine {spec['engine']!r} has no option(s) {', '.join(unknown)}"
        )
    if "model_name" in params and "model_name" not in options:
        options["model_name"] = name
    try:
        engine = cls(**options)
    except EngineLoadError:
        raise
    except Exception as exc:
        raise EngineLoadError(f"model {name!r}: {exc}") from exc
    engine.model_name = name
    return engine


__all__ = ["ENGINES", "build_engine", "engine_class"]
