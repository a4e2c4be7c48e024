"""`manage.py worker_ready`, the worker pods' readinessProbe, reads the readiness gate:
a live, healthy heartbeat of each model from a worker on this host."""

import socket
import time
import uuid

import pytest
from django.core.management import CommandError, call_command

from core.redis import get_redis
from inference_protocol import heartbeat

pytestmark = pytest.mark.needs_services


def _record(worker: str, model: str, **extra) -> dict:
    return {"worker": worker, "model": model, "at": time.time(), "free_slots": 1, **extra}


def test_ready_only_with_a_live_healthy_heartbeat_from_this_host(capsys):
    model = f"ready-{uuid.uuid4().hex[:8]}"
    here = f"{socket.gethostname()}:4242"
    with pytest.raises(CommandError, match=f"no live, healthy heartbeat of {model}"):
        call_command("worker_ready", "--model", model)

    heartbeat.publish([_record(f"elsewhere-{uuid.uuid4().hex[:6]}:1", model)])
    with pytest.raises(CommandError):  # another host's worker does not make this pod ready
        call_command("worker_ready", "--model", model)

    heartbeat.publish([_record(here, model, healthy=False)])
    with pytest.raises(CommandError):
        call_command("worker_ready", "--model", model)

    heartbeat.publish([_record(here, model)])
    call_command("worker_ready", "--model", model)
    assert f"ready on {socket.gethostname()}: {model}" in capsys.readouterr().out
    with pytest.raises(CommandError, match=f"of {model}@v2$"):  # every --model must be served
        call_command("worker_ready", "--model", model, "--model", f"{model}@v2")

    get_redis().delete(heartbeat.heartbeat_key(model, here))  # the TTL ran out: the worker died
    with pytest.raises(CommandError):
        call_command("worker_ready", "--model", model)
