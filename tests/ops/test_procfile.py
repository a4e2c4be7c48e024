"""`manage.py procfile`: the processes the settings call for, one worker per model queue;
`manage.py stack` runs them."""

import re
import signal
import subprocess
import sys

import pytest
from django.core.management import call_command

from config.production import processes
from tests.livesubprocess import ROOT
from tests.ops.env import production_env

pytestmark = pytest.mark.any_profile  # settings only: the same on the embedded default


def test_should_start_a_worker_per_queue_and_the_drivers_servers_do_not_run(settings, tmp_path):
    settings.CELERY_BROKER_URL = "amqp://guest:guest@127.0.0.1:5672//"
    settings.INFERENCE_MODELS = {"m": {"engine": "fixed_cost", "versions": {"v1": 90, "v2": 10}},
                                 "plain": {"engine": "fixed_cost"}}
    settings.EVAL_DISPATCH, settings.BATCH_DISPATCH = "thread", "none"
    found = {p.name: p.argv for p in processes(host="127.0.0.1", port=9000)}
    assert list(found) == ["web", "gpu-m-v1", "gpu-m-v2", "gpu-plain", "webhooks", "beat", "batch_worker"]
    assert found["web"][-5:] == ["serve", "--host", "127.0.0.1", "--port", "9000"]
    assert found["gpu-m-v1"][-5:] == ["worker", "-Q", "gpu.m@v1", "-n", "gpu-m-v1@%h"]
    assert found["webhooks"][-4:] == ["-Q", settings.WEBHOOK_QUEUE, "-n", f"{settings.WEBHOOK_QUEUE}@%h"]
    # No pool or concurrency flag: the Celery config sizes the workers.
    assert not {"-c", "-P", "--concurrency", "--pool"} & {a for argv in found.values() for a in argv}

    call_command("procfile", host="127.0.0.1", port=9000, out=str(tmp_path / "Procfile"))
    lines = (tmp_path / "Procfile").read_text().splitlines()
    assert [line.split(":")[0] for line in lines] == list(found)
    assert all(": exec " in line for line in lines)


def test_should_run_only_the_server_without_a_broker(settings):
    settings.CELERY_BROKER_URL = ""
    settings.EVAL_DISPATCH = settings.BATCH_DISPATCH = "thread"
    assert [p.name for p in processes(host="127.0.0.1", port=8000)] == ["web"]


def test_stack_lets_a_process_take_longer_than_honchos_five_seconds_to_stop(tmp_path):
    """honcho alone SIGKILLs a process still running 5 s after its SIGTERM; under
    `manage.py stack` one that needs 7 s (less than SHUTDOWN_GRACE_S) ends by itself."""
    (tmp_path / "Procfile").write_text(
        "slow: exec bash -c 'trap \"sleep 7; echo done; exit 0\" TERM; echo ready; "
        "while :; do sleep 0.1; done'\n")
    env = production_env(tmp_path, SHUTDOWN_GRACE_S="20")
    stack = subprocess.Popen([sys.executable, "manage.py", "stack", str(tmp_path / "Procfile")], cwd=ROOT,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in stack.stdout:
        lines.append(line)
        if line.rstrip().endswith("| ready"):
            stack.send_signal(signal.SIGINT)
            break
    lines += stack.stdout.readlines()
    output = "".join(lines)
    assert stack.wait(30) == 130, output  # honcho's status after a Ctrl-C
    assert "| done" in output and "SIGKILL" not in output, output
    assert re.search(r"slow\.1 stopped \(rc=0\)", output), output
