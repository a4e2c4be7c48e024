"""deploy/k8s/: every object against the Kubernetes API's JSON schema (kubernetes-validate,
strict: an unknown field fails), then what the schema cannot see: selectors that match
their pods, a worker per model with its readiness probe on the readiness gate, a PDB
for every Deployment that may be disrupted, the HPA's metric served by the adapter rule."""

import json
import re

import kubernetes_validate
import pytest
from django.http.request import validate_host

from tests.deploy.files import DEPLOY, ROOT, default_models, load_yaml

pytestmark = pytest.mark.any_profile

# The manifests use nothing newer than 1.30 has (apps/v1, autoscaling/v2, policy/v1,
# batch/v1): checked there and on the newest release the pinned package knows.
KUBERNETES_VERSIONS = ("1.30.0", kubernetes_validate.latest_version())
IMAGES = {"promptyard", "promptyard-ml"}


def _objects() -> list[dict]:
    return [doc for path in sorted((DEPLOY / "k8s").glob("*.yaml")) for doc in load_yaml(path)]


def _of_kind(kind: str) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in _objects() if o["kind"] == kind}


def _container(deployment: dict) -> dict:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container


def _config() -> dict[str, str]:
    return _of_kind("ConfigMap")["promptyard-config"]["data"]


def test_every_object_is_valid_for_the_kubernetes_api():
    objects = _objects()
    assert len(objects) >= 10
    for version in KUBERNETES_VERSIONS:
        for obj in objects:
            kubernetes_validate.validate(obj, version, strict=True)


def test_an_unknown_field_is_refused():
    beat = _of_kind("Deployment")["promptyard-beat"]
    beat["spec"]["replicass"] = 1
    with pytest.raises(kubernetes_validate.ValidationError, match="replicass"):
        kubernetes_validate.validate(beat, KUBERNETES_VERSIONS[0], strict=True)


def test_selectors_match_their_pods_and_every_disruptable_deployment_has_a_budget():
    deployments = _of_kind("Deployment")
    budgets = _of_kind("PodDisruptionBudget")
    for name, d in deployments.items():
        labels = d["spec"]["template"]["metadata"]["labels"]
        assert d["spec"]["selector"]["matchLabels"].items() <= labels.items(), name
        covering = [b for b in budgets.values()
                    if b["spec"]["selector"]["matchLabels"].items() <= labels.items()]
        assert len(covering) == (0 if name == "promptyard-beat" else 1), name
    service = _of_kind("Service")["promptyard"]
    serve_labels = deployments["promptyard-serve"]["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= serve_labels.items()


def test_pods_run_the_image_as_its_user_with_the_config_and_the_secret():
    workloads = [*_of_kind("Deployment").values(), *_of_kind("Job").values()]
    assert not _of_kind("Secret")  # made by hand, never committed
    for w in workloads:
        pod = w["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        container = _container(w)
        assert container["image"].split(":")[0] in IMAGES
        refs = [next(iter(ref.values()))["name"] for ref in container["envFrom"]]
        assert refs == ["promptyard-config", "promptyard-secrets"], w["metadata"]["name"]
        assert "CONFIG_SIGNING_KEY" not in json.dumps(w)
    docs = (ROOT / "docs" / "operations.md").read_text()
    assert "kubectl create secret generic promptyard-secrets" in docs
    migrate = _of_kind("Job")["promptyard-migrate"]
    assert _container(migrate)["command"] == ["python", "manage.py", "migrate", "--noinput"]


def test_one_worker_per_model_ready_by_the_readiness_gate_with_gpus_where_the_engine_needs_them():
    models = json.loads(_config()["INFERENCE_MODELS"])
    workers = {}
    for d in _of_kind("Deployment").values():
        command = " ".join(_container(d)["command"])
        for queue in re.findall(r"-Q gpu\.(\S+)", command):
            workers[queue] = d
    assert sorted(workers) == sorted(models)
    assert default_models() - {"fixed-cost"} <= set(models)  # fixed-cost is for capacity work and tests
    for model, d in workers.items():
        container = _container(d)
        assert container["readinessProbe"]["exec"]["command"] == [
            "python", "manage.py", "worker_ready", "--model", model]
        assert "livenessProbe" not in container  # an unverified model must stay up and say why
        gpus = container["resources"].get("limits", {}).get("nvidia.com/gpu")
        if models[model]["engine"] == "transformers":
            assert gpus == 1, model
            assert container["image"].startswith("promptyard-ml:")


def test_beat_is_one_replica_never_two_during_a_rollout():
    beat = _of_kind("Deployment")["promptyard-beat"]
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"] == {"type": "Recreate"}
    assert _container(beat)["command"] == ["celery", "-A", "config", "beat"]


def test_serve_scales_on_the_request_rate_the_adapter_serves():
    hpa = _of_kind("HorizontalPodAutoscaler")["promptyard-serve"]
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                             "name": "promptyard-serve"}
    (metric,) = hpa["spec"]["metrics"]
    (rule,) = load_yaml(DEPLOY / "prometheus" / "adapter-rules.yaml")[0]["rules"]
    assert metric["type"] == "Pods"
    assert metric["pods"]["metric"]["name"] == rule["name"]["as"]
    assert hpa["spec"]["minReplicas"] >= 2


def test_the_probes_and_the_scraper_send_hosts_that_django_allows():
    allowed = _config()["ALLOWED_HOSTS"].split(",")
    serve = _container(_of_kind("Deployment")["promptyard-serve"])
    probe = serve["readinessProbe"]["httpGet"]
    assert probe["path"] == "/healthz"
    (host,) = [h["value"] for h in probe["httpHeaders"] if h["name"] == "Host"]
    assert validate_host(host, allowed)
    assert not validate_host("10.1.2.3", allowed)  # why the probe names its Host
    (job,) = load_yaml(DEPLOY / "prometheus" / "prometheus.yaml")[0]["scrape_configs"]
    (rewrite,) = [r for r in job["relabel_configs"] if r.get("target_label") == "__address__"]
    target = re.sub(rf"^(?:{rewrite['regex']})$", rewrite["replacement"].replace("$", "\\"),
                    "10.1.2.3;promptyard;8000")
    assert target == "10-1-2-3.promptyard.pod.cluster.local:8000"
    assert validate_host(target.rpartition(":")[0], allowed)
