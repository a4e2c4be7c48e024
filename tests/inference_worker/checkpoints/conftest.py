"""Fixtures for checkpoint tests: published versions of random bytes in the real
S3 server, the origin proxy in front of it, and hosts' environments."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings

from inference_client.checkpoints.services import model_version_publish
from inference_protocol.checkpoints import Manifest

from .hosts import host_env
from .origin import Origin


@pytest.fixture(scope="session")
def origin():
    with Origin(settings.S3_ENDPOINT_URL) as proxy:
        yield proxy


@dataclass
class Published:
    model: str
    version: str
    manifest: Manifest
    files: dict[str, Path]  # checkpoint path -> the bytes as published

    @property
    def label(self) -> str:
        return f"{self.model}@{self.version}"


@pytest.fixture
def publish(db, tmp_path):
    """publish({"weights.bin": 3_000_000, "cfg/config.json": 2_000}) -> Published."""

    def make(files: dict[str, int], *, model: str | None = None, version: str = "v1",
             piece_size: int = 0) -> Published:
        model = model or f"t{uuid.uuid4().hex[:12]}"
        src = tmp_path / f"src-{model}-{version}"
        for name, size in files.items():
            path = src / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(os.urandom(size))
        row, created = model_version_publish(model=model, version=version, paths=[src], created_by="tests",
                                             piece_size=piece_size)
        assert created
        return Published(model, version, Manifest.from_dict(row.manifest), {n: src / n for n in files})

    return make


@pytest.fixture
def env_for(origin):
    """The environment of a host process: S3 through the origin proxy, Redis of the tests."""

    def make(*, rate: int = 0, redis_url: str | None = settings.REDIS_URL, **extra: str) -> dict:
        return host_env(origin=origin.url, redis_url=redis_url, rate=rate, **extra)

    return make
