"""What a change tells the rest of the system (channel events, revocation
marks, config broadcasts, job threads) goes out once its transaction commits:
nobody hears of a change that is then rolled back, or looks for rows not yet there."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from django.db import transaction


def after_commit(fn: Callable[..., object], /, *args: Any, **kwargs: Any) -> None:
    """``fn(*args, **kwargs)`` once the current transaction commits (at once
    outside one); the arguments are bound now, not when it runs."""
    transaction.on_commit(partial(fn, *args, **kwargs))
