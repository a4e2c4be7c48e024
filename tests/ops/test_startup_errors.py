"""Bad input at start: a missing or malformed setting, a port in use, an
unreachable database, broker or object store stop a server, a worker, beat or a
job driver with one line naming it and a non-zero exit, never a traceback."""

import socket
import subprocess
import sys

import pytest

from tests.livesubprocess import ROOT, free_port
from tests.ops.env import production_env

pytestmark = [pytest.mark.needs_services, pytest.mark.slow]

SERVE = ("manage.py", "serve", "--host", "127.0.0.1", "--port", "{port}")
WORKER = ("-m", "celery", "-A", "config", "worker", "-Q", "gpu.startup-test")
BEAT = ("-m", "celery", "-A", "config", "beat", "-s", "{var}/beat-schedule")
EVAL_DRIVER = ("manage.py", "eval_worker")
UNREACHABLE = {
    "broker": {"CELERY_BROKER_URL": "amqp://guest:guest@127.0.0.1:{dead}//"},
    "s3": {"S3_ENDPOINT_URL": "http://127.0.0.1:{dead}"},
    "db": {"DATABASE_URL": "postgres://postgres@127.0.0.1:{dead}/promptyard"},
}


@pytest.mark.parametrize(("argv", "env", "says"), [
    (SERVE, {"DB_POOL_MAX_SIZE": "many"}, "promptyard: DB_POOL_MAX_SIZE='many' is not an integer"),
    (WORKER, {"INFERENCE_MODELS": "[not json"}, "promptyard: INFERENCE_MODELS is not valid JSON"),
    (SERVE, {"CONFIG_SIGNING_KEY": "", "CONFIG_PUBLIC_KEY": "bm90IGEga2V5"},
     "promptyard: CONFIG_PUBLIC_KEY is not an Ed25519 public key"),
    (BEAT, {"CONFIG_SIGNING_KEY": "c2hvcnQ="},
     "promptyard: CONFIG_SIGNING_KEY is not an Ed25519 private key"),
    (SERVE, {"SECRET_KEY": ""}, "SECRET_KEY is not set"),
    (WORKER, {"REDIS_URL": ""}, "promptyard: REDIS_URL is not set"),
    (SERVE, UNREACHABLE["broker"], "the broker is unreachable"),
    (WORKER, UNREACHABLE["broker"], "promptyard: the broker is unreachable"),
    (BEAT, UNREACHABLE["broker"], "promptyard: the broker is unreachable"),
    (SERVE, UNREACHABLE["s3"], "is unreachable (EndpointConnectionError"),
    (EVAL_DRIVER, UNREACHABLE["s3"], "check S3_ENDPOINT_URL"),
    (SERVE, UNREACHABLE["db"], "the database is unreachable"),
], ids=["serve-malformed-int", "worker-malformed-json", "serve-malformed-public-key",
        "beat-malformed-signing-key", "serve-no-secret-key", "worker-no-redis", "serve-no-broker",
        "worker-no-broker", "beat-no-broker", "serve-no-s3", "eval-driver-no-s3", "serve-no-database"])
def test_should_refuse_to_start_with_one_line_naming_the_problem(django_db_setup, tmp_path, argv, env, says):
    dead = free_port()  # nothing listens there
    changes = {k: v.format(dead=dead) for k, v in env.items()}
    argv = [a.format(port=free_port(), var=tmp_path) for a in argv]
    result = subprocess.run([sys.executable, *argv], cwd=ROOT, env=production_env(tmp_path, **changes),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0, result.stdout + result.stderr
    assert says in result.stderr, result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_should_refuse_a_port_in_use(django_db_setup, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run([sys.executable, *SERVE[:-1], str(port)], cwd=ROOT,
                                env=production_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip() == (f"StartupError: cannot listen on 127.0.0.1:{port} (Address already in "
                                     "use): stop what uses the port or pass another --port")
