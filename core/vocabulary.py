"""The words every layer shares: an account's tier and a generation's priority."""

from __future__ import annotations

import enum

from django.db.models import TextChoices


class Tier(TextChoices):
    """An account's tier (and its keys'): its rate limits and its priority."""

    FREE = "free", "Free"
    PAID = "paid", "Paid"


class Priority(enum.IntEnum):
    """Paid before free (free with an age bound); batch (the Batch API,
    evaluations) only in slots interactive traffic leaves empty. On the wire
    (GenerationRequest.priority) by its lower-case name."""

    PAID = 0
    FREE = 1
    BATCH = 2

    @classmethod
    def parse(cls, value: Priority | str | int) -> Priority:
        if isinstance(value, str):
            try:
                return cls[value.upper()]
            except KeyError:
                raise ValueError(f"unknown priority {value!r} (paid, free or batch)") from None
        return cls(value)

    @classmethod
    def of(cls, tier: str, *, batch: bool) -> Priority:
        """A request's: batch work's, else its tier's."""
        return cls.BATCH if batch else cls.PAID if tier == Tier.PAID else cls.FREE

    @property
    def wire(self) -> str:
        return self.name.lower()
