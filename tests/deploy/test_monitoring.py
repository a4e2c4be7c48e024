"""deploy/grafana/promptyard.json and deploy/prometheus/: every expression parses as
PromQL (promql-parser) and names only series the code registers, the alerts cover
what an operator is paged for, the dashboard's panels are distinct and complete."""

import json
import re
import shutil
import subprocess

import pytest

from tests.deploy.files import DEPLOY, exposed_metric_names, load_yaml, metric_names_in, parse_promql

pytestmark = pytest.mark.any_profile

DASHBOARD = DEPLOY / "grafana" / "promptyard.json"
PROMETHEUS = DEPLOY / "prometheus"
PROMTOOL = shutil.which("promtool")
# Grafana's variables, as Grafana replaces them before the query reaches Prometheus.
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$model": ".*"}


def _rules() -> list[dict]:
    (doc,) = load_yaml(PROMETHEUS / "alerts.yaml")
    return [rule for group in doc["groups"] for rule in group["rules"]]


def _dashboard_exprs() -> list[tuple[str, str]]:
    dashboard = json.loads(DASHBOARD.read_text())
    out = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for name, value in GRAFANA_VARIABLES.items():
                expr = expr.replace(name, value)
            out.append((panel["title"], expr))
    return out


def test_the_registry_is_read_from_the_code():
    names = exposed_metric_names()
    assert "inference_requests_total" in names
    assert "promptyard:request_queue_time_seconds_bucket" in names
    assert "promptyard:checkpoint_done_bytes" in names
    assert "promptyard:request_queue_time_seconds" not in names  # a histogram shows _bucket, _sum, _count


def test_a_bad_expression_or_an_unknown_metric_is_caught():
    with pytest.raises(ValueError):
        parse_promql("sum(rate(inference_requests_total[5m])")
    assert metric_names_in("rate(inference_request_total[5m])") - exposed_metric_names() == {
        "inference_request_total"}


def test_every_alert_parses_names_real_series_and_says_what_it_is():
    rules = _rules()
    for rule in rules:
        assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}, rule.get("alert")
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert {"summary", "description"} <= set(rule["annotations"])
        assert re.fullmatch(r"\d+[smh]", rule["for"])
        used = metric_names_in(rule["expr"])
        assert used and used <= exposed_metric_names(), (rule["alert"], used - exposed_metric_names())
    names = [r["alert"] for r in rules]
    assert len(names) == len(set(names))
    assert {"PromptyardQueueAgeHigh", "PromptyardPaidTrafficShed", "PromptyardWorkerLost",
            "PromptyardErrorRateHigh", "PromptyardSwarmProgressStalled"} <= set(names)


def test_every_alert_has_a_unit_test_that_fires_it():
    (tests,) = load_yaml(PROMETHEUS / "alerts_test.yaml")
    firing = {case["alertname"] for test in tests["tests"] for case in test["alert_rule_test"]
              if case["exp_alerts"]}
    assert {rule["alert"] for rule in _rules()} - firing == set()


@pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian: apt-get install prometheus)")
def test_promtool_checks_the_rules_and_runs_their_unit_tests():
    for args in (["check", "rules", "alerts.yaml"], ["test", "rules", "alerts_test.yaml"]):
        done = subprocess.run([PROMTOOL, *args], cwd=PROMETHEUS, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr


def test_the_adapter_rule_is_promql_over_a_real_series():
    (rule,) = load_yaml(PROMETHEUS / "adapter-rules.yaml")[0]["rules"]
    query = (rule["metricsQuery"].replace("<<.Series>>", "inference_requests_total")
             .replace("<<.LabelMatchers>>", 'namespace="promptyard",pod="serve-0"')
             .replace("<<.GroupBy>>", "pod"))
    assert metric_names_in(query) == {"inference_requests_total"}
    assert metric_names_in(rule["seriesQuery"]) == {"inference_requests_total"}


def test_prometheus_loads_the_rules_beside_it():
    (config,) = load_yaml(PROMETHEUS / "prometheus.yaml")
    assert all((PROMETHEUS / f).is_file() for f in config["rule_files"])


def test_the_dashboard_has_distinct_panels_on_real_series():
    dashboard = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    titles = [p["title"] for p in dashboard["panels"]]
    assert len(titles) == len(set(titles))
    for title, expr in _dashboard_exprs():
        used = metric_names_in(expr)
        assert used and used <= exposed_metric_names(), (title, used - exposed_metric_names())
    for panel in dashboard["panels"]:
        if panel["type"] != "row":
            assert panel["targets"] and panel["datasource"]["uid"] == "${datasource}", panel["title"]
            assert len({t["refId"] for t in panel["targets"]}) == len(panel["targets"])
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert {name.lstrip("$") for name in GRAFANA_VARIABLES if not name.startswith("$__")} <= variables


def test_the_dashboard_shows_what_the_alerts_watch():
    series = {title: metric_names_in(expr) for title, expr in _dashboard_exprs()}
    wanted = {"request rate": "inference_requests_total",
              "latency": "promptyard:e2e_request_latency_seconds_bucket",
              "queue age": "promptyard:request_queue_time_seconds_bucket",
              "shed / 429 rate": "promptyard:admission_refusals_total",
              "worker loss": "inference_live_workers",
              "swarm progress": "promptyard:checkpoint_done_bytes"}
    shown = set().union(*series.values())
    assert {what for what, name in wanted.items() if name not in shown} == set()
    assert any('status=~"5.."' in expr for _, expr in _dashboard_exprs())  # the error rate
