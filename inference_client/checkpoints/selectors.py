"""Reads of published model versions."""

from __future__ import annotations

from inference_client.models import ModelVersion


def model_version_get(*, model: str, version: str) -> ModelVersion | None:
    return ModelVersion.objects.filter(model=model, version=version).first()


def model_version_list(*, model: str | None = None):
    rows = ModelVersion.objects.all()
    return rows.filter(model=model) if model else rows
