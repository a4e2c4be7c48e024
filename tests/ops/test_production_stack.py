"""`scripts/run.sh --production` against the test run's PostgreSQL, Redis,
RabbitMQ and S3: it starts every process of its Procfile under honcho, serves
a /v1 call, a chat message, an evaluation run, a batch and a webhook delivery,
and SIGINT stops every process it started."""

import asyncio
import io
import json
import os
import re
import signal
import subprocess
import uuid
from pathlib import Path

import httpx
import openai
import pytest
from websockets.asyncio.client import connect

from core.liveness import last_seen
from evals.datasets import dataset_create, dataset_version_create
from evals.models import EvalRun
from evals.runs import evalrun_create
from inference_protocol.backend import live_workers
from playground import services
from tests.evals.conftest import rows
from tests.factories import ApiKeyFactory, PromptFactory, PromptVersionFactory, UserFactory
from tests.inference_worker.workers import delete_queues
from tests.livesubprocess import ROOT, free_port, running_server
from tests.ops.env import manage, production_env, statuses
from tests.playground.webhook_receiver import Receiver
from tests.polling import wait_for
from webhooks.models import WebhookDelivery
from webhooks.services import endpoint_create

pytestmark = [pytest.mark.needs_services, pytest.mark.slow, pytest.mark.timeout(300)]

MODEL = f"stack-{uuid.uuid4().hex[:6]}"
MODELS = {MODEL: {"engine": "fixed_cost", "max_inputs": 8, "call_s": 0.05}}
QUEUE = f"webhooks-stack-{os.getpid()}"


def _stack_env(tmp_path) -> dict:
    return production_env(tmp_path, INFERENCE_MODELS=json.dumps(MODELS), WEBHOOK_QUEUE=QUEUE,
                          WEBHOOK_ALLOWED_NETWORKS="127.0.0.1/32", WEBHOOK_ALLOW_HTTP="true")


@pytest.fixture
def stack_settings(settings):
    """This process creates rows the stack works on: it sees the same catalog and webhook rules."""
    settings.INFERENCE_MODELS = MODELS
    settings.WEBHOOK_QUEUE = QUEUE
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.WEBHOOK_ALLOW_HTTP = True
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


async def _chat(base: str, ws_url: str, alice, akey: str, bob, bkey: str) -> dict:
    async def welcomed(key):
        ws = await connect(ws_url, origin=base, additional_headers={"Authorization": f"Bearer {key}"})
        while json.loads(await ws.recv())["type"] != "welcome":
            pass
        await ws.send(json.dumps({"type": "hello"}))
        return ws

    async with await welcomed(akey) as alice_ws, await welcomed(bkey) as bob_ws:
        await alice_ws.send(json.dumps({"type": "send", "to": bob.pk, "client_msg_id": "m1",
                                        "body": "hi from the stack"}))
        while (frame := json.loads(await asyncio.wait_for(bob_ws.recv(), 20)))["type"] != "message":
            pass
        return frame


def test_should_run_the_whole_stack_and_stop_every_process_on_sigint(transactional_db, stack_settings,
                                                                       tmp_path):
    port = free_port()
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    akey, bkey = (ApiKeyFactory.create_with_raw(user=u)[1] for u in (alice, bob))
    receiver = Receiver()
    args = ["scripts/run.sh", "--production", "--host", "127.0.0.1", "--port", str(port)]
    try:
        with running_server(args, _stack_env(tmp_path), port, timeout=180, program=("bash",),
                            ready_path="/healthz") as server:
            assert httpx.get(f"{server.base}/healthz").json()["status"] == "ok"
            wait_for(lambda: live_workers(MODEL), timeout=90, what="the model's worker")
            client = openai.OpenAI(base_url=f"{server.base}/v1", api_key=akey, max_retries=0)

            answer = client.chat.completions.create(model=MODEL,
                                                    messages=[{"role": "user", "content": "abc"}])
            assert answer.choices[0].message.content == "cba"

            frame = asyncio.run(_chat(server.base, f"ws://127.0.0.1:{port}/ws/chat/", alice, akey, bob, bkey))
            assert (frame["body"], frame["sender"]) == ("hi from the stack", alice.pk)

            dataset = dataset_create(owner=alice, name="stack")
            dataset_version_create(dataset=dataset, author=alice, add=rows(("abc", "cba"), ("xy", "yx")))
            version = PromptVersionFactory(prompt=PromptFactory(owner=alice), body="{{q}}", model_name=MODEL)
            run = evalrun_create(user=alice, dataset_id=dataset.pk, evaluators=["exact"],
                                 columns=[{"prompt": str(version.prompt_id), "version": str(version.pk)}])
            done = wait_for(lambda: (r := EvalRun.objects.get(pk=run.pk)).status == "done" and r,
                            timeout=90, what="the evaluation run")  # driven by the stack's eval_worker
            assert (done.completed, done.failed) == (2, 0)

            lines = [{"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions",
                      "body": {"model": MODEL, "messages": [{"role": "user", "content": f"line {i}"}]}}
                     for i in range(3)]
            upload = client.files.create(file=("in.jsonl", io.BytesIO(
                "".join(json.dumps(line) + "\n" for line in lines).encode())), purpose="batch")
            batch = client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions",
                                          completion_window="24h")
            finished = wait_for(lambda: (b := client.batches.retrieve(batch.id)).status == "completed" and b,
                                timeout=90, what="the batch")  # driven by the stack's batch_worker
            out = [json.loads(x) for x in client.files.content(finished.output_file_id).text.splitlines()]
            assert sorted((o["custom_id"], o["response"]["body"]["choices"][0]["message"]["content"])
                          for o in out) == [(f"r{i}", f"line {i}"[::-1]) for i in range(3)]

            prompt = PromptFactory(owner=alice)
            endpoint_create(owner=alice, url=receiver.url, events=["version.created"], prompt=prompt)
            services.version_create(prompt=prompt, author=alice, body="Hi {{name}}", model_name=MODEL)
            delivered = wait_for(lambda: (d := WebhookDelivery.objects.get()).status == "succeeded" and d,
                                 timeout=60, what="the webhook delivery")  # the stack's webhooks worker
            assert [got["body"] for got in receiver.received] == [bytes(delivered.body)]

            wait_for(lambda: last_seen("beat"), timeout=30, what="beat's first tick")
            doctor = manage(_stack_env(tmp_path), "doctor")
            assert doctor.returncode == 0, doctor.stdout + doctor.stderr
            # Every part is well; the warning: no config document is published (document 0 runs).
            assert statuses(doctor.stdout) == {
                "settings": "ok", "database": "ok", "redis": "ok", "broker": "ok", "object store": "ok",
                "migrations": "ok", "config document": "warn", f"weights {MODEL}": "ok",
                f"queue gpu.{MODEL}": "ok", f"queue {QUEUE}": "ok", "beat": "ok", "driver run": "ok",
                "driver import": "ok", "driver batch": "ok"}, doctor.stdout

            server.proc.send_signal(signal.SIGINT)  # honcho: Ctrl-C
            assert server.proc.wait(60) is not None
            output = server.output()
    finally:
        receiver.close()
        delete_queues([f"gpu.{MODEL}", QUEUE])
    started = dict(re.findall(r"\| (\S+) started \(pid=(\d+)\)", output))
    stopped = set(re.findall(r"\| (\S+) stopped \(rc=", output))
    assert set(started) == {"web.1", f"gpu-{MODEL}.1", "webhooks.1", "beat.1", "eval_worker.1",
                            "batch_worker.1"}, output
    assert stopped == set(started), output
    # Each stopped on honcho's SIGTERM (by its handler: 0, or by the signal: -15), before
    # `manage.py stack` would SIGKILL it.
    assert "SIGKILL" not in output, output
    assert set(re.findall(r"\| \S+ stopped \(rc=(-?\d+)\)", output)) <= {"0", "-15"}, output
    assert [name for name, pid in started.items() if _group_alive(int(pid))] == [], output


def _group_alive(pgid: int) -> bool:
    """Whether a process of the group runs still (honcho started each in a group of
    its own); a zombie has exited, whoever reaps it."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def test_should_start_nothing_and_name_each_missing_setting_with_how_to_make_it(django_db_setup, tmp_path):
    env = production_env(tmp_path, METRICS_TOKEN="", CONFIG_SIGNING_KEY="", CONFIG_PUBLIC_KEY="",
                         SECRET_KEY="", TRUSTED_PROXIES="")
    result = subprocess.run(["bash", "scripts/run.sh", "--production"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    fails = [line for line in result.stdout.splitlines() if line.startswith("fail")]
    assert [line.split(":")[0] for line in fails] == [
        "fail  setting SECRET_KEY", "fail  setting TRUSTED_PROXIES", "fail  setting CONFIG_PUBLIC_KEY",
        "fail  setting METRICS_TOKEN"], result.stdout
    assert "not set: export SECRET_KEY=$(python3 -c" in fails[0]
    assert "manage.py config_keygen" in fails[2] and "secrets.token_urlsafe" in fails[3]
    assert "fix each 'fail' line above" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "Procfile").exists()
