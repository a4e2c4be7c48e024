"""deploy/compose.yaml and deploy/Dockerfile, checked as `docker compose config` would
(no Docker daemon here): the Compose Specification's schema after interpolation, the
stack's processes, and every setting a production process needs passed from the
environment, never a secret in the file."""

import importlib.resources
import json
import re

import jsonschema
import pytest
import yaml

from tests.deploy.files import DEPLOY, ROOT, compose_variables, default_models, interpolate

pytestmark = pytest.mark.any_profile

COMPOSE = DEPLOY / "compose.yaml"
# What a production process reads from its environment (docs/operations.md,
# "Running with services"): the services, the keys, and who may call /metrics.
REQUIRED = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "S3_ENDPOINT_URL", "S3_BUCKET",
            "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY", "SECRET_KEY", "CONFIG_PUBLIC_KEY", "METRICS_TOKEN",
            "ALLOWED_HOSTS", "TRUSTED_PROXIES")
# Settings whose value is a credential: only ever ${VAR:?...} in the file.
SECRETS = ("S3_SECRET_ACCESS_KEY", "SECRET_KEY", "METRICS_TOKEN")


def _schema() -> dict:
    vendor = importlib.resources.files("check_jsonschema.builtin_schemas.vendor")
    return json.loads((vendor / "compose-spec.json").read_text())


def _env() -> dict[str, str]:
    return {name: f"value-of-{name.lower()}" for name in compose_variables(COMPOSE.read_text())}


def _compose() -> dict:
    return yaml.safe_load(interpolate(COMPOSE.read_text(), _env()))


def _app_services(compose: dict) -> dict[str, dict]:
    return {name: s for name, s in compose["services"].items()
            if s.get("build", {}).get("dockerfile") == "deploy/Dockerfile"}


def test_the_interpolated_file_is_valid_compose():
    errors = [e.message for e in jsonschema.Draft202012Validator(_schema()).iter_errors(_compose())]
    assert errors == []


def test_a_missing_secret_stops_the_stack_naming_it():
    env = _env()
    del env["SECRET_KEY"]
    with pytest.raises(KeyError, match="SECRET_KEY: set SECRET_KEY"):
        interpolate(COMPOSE.read_text(), env)


def test_every_service_has_an_image_and_depends_only_on_services_that_exist():
    services = _compose()["services"]
    for name, service in services.items():
        assert "image" in service or "build" in service, name
        missing = set(service.get("depends_on", {})) - set(services)
        assert not missing, f"{name} depends on {missing}"


def test_the_stack_runs_every_process_of_a_production_stack():
    compose = _compose()
    services = compose["services"]
    commands = {name: " ".join(s.get("command", [])) for name, s in _app_services(compose).items()}
    assert {"postgres", "redis", "rabbitmq", "s3", "migrate", "nginx"} <= set(services)
    serving = [n for n, c in commands.items() if c.startswith("python manage.py serve")]
    assert len(serving) >= 2
    upstream = (DEPLOY / "nginx.conf").read_text()
    assert all(f"server {name}:8000;" in upstream for name in serving)
    assert sum(c == "celery -A config beat" for c in commands.values()) == 1
    assert any("-Q webhooks" in c for c in commands.values())
    assert any(c.startswith("python manage.py batch_worker") for c in commands.values())
    assert any(c.startswith("python manage.py eval_worker") for c in commands.values())
    models = json.loads(compose["x-env"]["INFERENCE_MODELS"])
    queues = [q for c in commands.values() for q in re.findall(r"-Q (gpu\.\S+)", c)]
    assert sorted(queues) == sorted(f"gpu.{m}" for m in models)  # one worker per model queue
    assert default_models() <= set(models)  # the default catalog, embeddings included
    for name, service in _app_services(compose).items():
        if name != "migrate":
            assert service["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}, name
    assert services["migrate"]["command"] == ["python", "manage.py", "migrate", "--noinput"]


def test_every_app_process_gets_every_required_setting_and_no_secret_is_in_the_file():
    settings_code = "".join(p.read_text() for p in (ROOT / "config" / "settings").glob("*.py"))
    for name in REQUIRED:  # still the settings' names: a rename fails here
        assert re.search(rf'env_\w+\("{name}"', settings_code), name
    for name, service in _app_services(_compose()).items():
        env = service["environment"]
        assert not [s for s in REQUIRED if not env.get(s)], name
        assert "CONFIG_SIGNING_KEY" not in env  # the control plane's only
    raw = yaml.safe_load(COMPOSE.read_text())["x-env"]
    for name in SECRETS:
        assert raw[name].startswith(f"${{{name}:?"), name
    for url in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"):
        password = re.search(r"://[^:]*:([^@]*)@", raw[url]).group(1)
        assert re.fullmatch(r"\$\{[A-Z_]+:\?[^}]+\}", password), url


def test_every_variable_is_documented():
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", (ROOT / "docs" / "operations.md").read_text()))
    assert compose_variables(COMPOSE.read_text()) - documented == set()


def test_the_image_installs_the_locked_profiles_and_runs_serve_as_a_user():
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    stages = {alias for _, alias in re.findall(r"^FROM (\S+) AS (\S+)$", dockerfile, re.M)}
    assert {"app", "worker-ml"} <= stages
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.\d+-slim", dockerfile, re.M)
    assert "RUN PROMPTYARD_WHEEL_CACHE=/tmp/wheels scripts/install.sh " in dockerfile
    assert "scripts/install.sh --ml" in dockerfile
    # The default target is the last stage; both runnable stages drop root and collect static files.
    final_stages = dockerfile.split("\nFROM runtime AS ")[1:]
    assert [s.split("\n")[0] for s in final_stages] == ["worker-ml", "app"]
    for stage in final_stages:
        assert "collectstatic --noinput" in stage
        instructions = [line for line in stage.splitlines()[1:] if line and not line.startswith("#")]
        assert instructions[-1] == "USER promptyard"
    assert 'CMD ["python", "manage.py", "serve", "--host", "0.0.0.0", "--port", "8000"]' in dockerfile
    for source in re.findall(r"^COPY (?!--from)(\S+) ", dockerfile, re.M):
        assert (ROOT / source).exists(), source
    targets = {s["build"]["target"] for s in _app_services(_compose()).values()}
    assert targets <= stages
