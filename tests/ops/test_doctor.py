"""`manage.py doctor` on real parts: every check ok, and each failure it can be
shown here (a service on a wrong port, a missing bucket, a missing setting, no
worker for a queue, a config document signed with another key) named with what to do."""

import datetime
import json
import uuid

import pytest

from core.redis import get_redis
from inference_protocol.config_document import ConfigDocument
from inference_protocol.signing import generate_keypair
from tests.livesubprocess import free_port
from tests.ops.env import manage, production_env, statuses

pytestmark = [pytest.mark.needs_services, pytest.mark.slow]


def _lines(result) -> dict[str, str]:
    """part -> its whole line."""
    return {rest.split(":", 1)[0]: line for line in result.stdout.splitlines()
            for rest in [line.split(None, 1)[1]]}


def test_should_pass_every_check_before_start_with_production_settings(django_db_setup, tmp_path):
    result = manage(production_env(tmp_path), "doctor", "--before-start")
    assert result.returncode == 0, result.stdout + result.stderr
    assert statuses(result.stdout) == {"settings": "ok", "database": "ok", "redis": "ok", "broker": "ok",
                                       "object store": "ok"}


@pytest.mark.parametrize(("variable", "value", "part", "says"), [
    ("REDIS_URL", "redis://127.0.0.1:{port}/0", "redis", "check REDIS_URL"),
    ("CELERY_BROKER_URL", "amqp://guest:guest@127.0.0.1:{port}//", "broker", "check CELERY_BROKER_URL"),
    ("S3_ENDPOINT_URL", "http://127.0.0.1:{port}", "object store", "check S3_ENDPOINT_URL"),
    ("DATABASE_URL", "postgres://postgres@127.0.0.1:{port}/promptyard", "database", "check DATABASE_URL"),
    ("METRICS_TOKEN", "", "setting METRICS_TOKEN", "export METRICS_TOKEN="),
    ("TRUSTED_PROXIES", "10.0.0.0/99", "setting TRUSTED_PROXIES", "is not an address or network"),
    ("SECRET_KEY", "short", "setting SECRET_KEY", "too weak"),
])
def test_should_fail_naming_the_part_and_what_to_do(django_db_setup, tmp_path, variable, value, part, says):
    env = production_env(tmp_path, **{variable: value.format(port=free_port())})
    result = manage(env, "doctor", "--before-start")
    assert result.returncode == 1, result.stdout + result.stderr
    line = _lines(result)[part]
    assert line.startswith("fail") and says in line, line
    assert "Traceback" not in result.stderr
    # The other parts are still checked, each on its line.
    assert {"database", "redis", "broker", "object store"} <= set(statuses(result.stdout))


def test_should_fail_a_missing_bucket_absent_processes_and_a_document_of_another_key(django_db_setup,
                                                                                      tmp_path):
    model, namespace = f"doctor-{uuid.uuid4().hex[:6]}", f"config-doctor-{uuid.uuid4().hex[:6]}"
    other_key, _ = generate_keypair()
    doc = ConfigDocument(number=1, parent=None, content={}, created_by="elsewhere",
                         created_at=datetime.datetime.now(datetime.UTC).isoformat()).signed(other_key)
    get_redis().set(f"{namespace}:latest", doc.to_json(), ex=120)
    env = production_env(tmp_path, S3_BUCKET=f"missing-{uuid.uuid4().hex[:8]}", CONFIG_NAMESPACE=namespace,
                         INFERENCE_MODELS=json.dumps({model: {"engine": "fixed_cost"}}),
                         WEBHOOK_QUEUE=f"webhooks-{model}")
    result = manage(env, "doctor")
    assert result.returncode == 1
    lines = _lines(result)
    expected = {
        "object store": "does not exist: create it",
        "config document": "does not verify",
        f"queue gpu.{model}": f"start `celery -A config worker -Q gpu.{model}`",
        f"queue webhooks-{model}": f"start `celery -A config worker -Q webhooks-{model}`",
    }
    for part, says in expected.items():
        assert lines[part].startswith("fail") and says in lines[part], result.stdout
    assert lines["migrations"].startswith("ok") and lines[f"weights {model}"].startswith("ok"), result.stdout
