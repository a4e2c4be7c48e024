"""Promptyard's Python SDK: prompts by label with a bounded-staleness cache.

    from promptyard import Promptyard
    py = Promptyard("http://127.0.0.1:8000", api_key)
    version = py.get_prompt(prompt_id, label="production")
    version.render({"name": "Ada"})["messages"]
    version.run({"name": "Ada"})

    py.production.generations(prompt_id, label="production")   # what it does in production
    py.production.alerts(prompt_id)                             # regression alerts; rollback, dismiss

    from promptyard.webhooks import verify      # a webhook receiver's check
    event = verify(body, headers, secret)
"""

from .cache import BoundedStalenessCache
from .client import AsyncPromptyard, PromptVersion, Promptyard
from .errors import (
    ApiError,
    AuthenticationError,
    LabelNotFound,
    NotFound,
    PromptNotFound,
    PromptyardError,
    RenderError,
    ServerUnavailable,
)
from .splits import split_pick
from .webhooks import WebhookVerificationError

__all__ = ["ApiError", "AsyncPromptyard", "AuthenticationError", "BoundedStalenessCache", "LabelNotFound",
           "NotFound", "PromptNotFound", "PromptVersion", "Promptyard", "PromptyardError", "RenderError",
           "ServerUnavailable", "WebhookVerificationError", "split_pick"]
__version__ = "0.1.0"
