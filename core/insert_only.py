"""Models whose saved rows never change (published checkpoints, config documents):
the ORM refuses save() of a saved row, update() and bulk_update(); each such table's
migration adds a PostgreSQL trigger that refuses UPDATEs below the ORM too."""

from typing import Any, ClassVar

from django.db import models


class InsertOnlyQuerySet(models.QuerySet[Any]):
    def update(self, **kwargs: Any) -> int:
        raise self.model.refusal()

    def bulk_update(self, objs: Any, fields: Any, *args: Any, **kwargs: Any) -> int:
        raise self.model.refusal()


class InsertOnlyModel(models.Model):
    """Subclasses name the exception (`immutable_error`) and its message."""

    immutable_error: ClassVar[type[Exception]]
    immutable_message: ClassVar[str]

    objects = InsertOnlyQuerySet.as_manager()

    class Meta:
        abstract = True

    @classmethod
    def refusal(cls) -> Exception:
        return cls.immutable_error(cls.immutable_message)

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise self.refusal()
        super().save(*args, **kwargs)
