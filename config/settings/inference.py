"""Inference: which models exist and which engine serves each.

INFERENCE_MODELS: JSON object, model name -> engine spec, e.g.
  {"smollm2": {"engine": "llamacpp"},
   "fixed-cost": {"engine": "fixed_cost", "max_inputs": 50, "call_s": 0.2}}
"""

import json

from core.env import env_str

INFERENCE_MODELS = json.loads(
    env_str(
        "INFERENCE_MODELS",
        json.dumps(
            {
                "smollm2": {"engine": "llamacpp"},
                "fixed-cost": {"engine": "fixed_cost", "max_inputs": 50, "call_s": 0.2},
            }
        ),
    )
)
DEFAULT_MODEL = env_str("DEFAULT_MODEL", "smollm2")
