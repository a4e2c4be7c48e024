"""What the deployment tests read: the files under deploy/, the metric names the
code registers, and PromQL taken apart by a real parser (promql-parser)."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import promql_parser
import yaml

from tests.layout import CODE_PACKAGES

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
# The packages whose code may register a metric (not tests, bench or the SDK).
CODE = CODE_PACKAGES

# Every prometheus_client metric or collector family, by constructor and its first
# argument: Counter("inference_requests_total", ...), GaugeMetricFamily("...", ...).
_METRIC = re.compile(r"\b(Counter|Gauge|Histogram|Summary|CounterMetricFamily|GaugeMetricFamily|"
                     r"HistogramMetricFamily|SummaryMetricFamily)\(\s*\"([^\"]+)\"")
# The series each kind shows (a counter's name without its _total).
_SUFFIXES = {"Counter": ("_total", "_created"), "Histogram": ("_bucket", "_count", "_sum", "_created"),
             "Summary": ("_count", "_sum", "_created")}


def load_yaml(path: Path) -> list:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


@cache
def exposed_metric_names() -> frozenset[str]:
    """The series names /metrics can show, from the constructors in the code."""
    names: set[str] = set()
    for package in CODE:
        for path in (ROOT / package).rglob("*.py"):
            for kind, name in _METRIC.findall(path.read_text()):
                kind = kind.removesuffix("MetricFamily")
                if kind == "Counter":
                    name = name.removesuffix("_total")
                if kind in _SUFFIXES:
                    names.update(name + suffix for suffix in _SUFFIXES[kind])
                else:
                    names.add(name)
    return frozenset(names)


def default_models() -> set[str]:
    """The models of the default catalog (config/settings/inference.py), whatever the
    environment of this run says."""
    tree = ast.parse((ROOT / "config" / "settings" / "inference.py").read_text())
    (assign,) = [n for n in tree.body if isinstance(n, ast.Assign)
                 and [t.id for t in n.targets if isinstance(t, ast.Name)] == ["INFERENCE_MODELS"]]
    catalog = next(n for n in ast.walk(assign) if isinstance(n, ast.Dict))  # the outermost
    return set(ast.literal_eval(catalog))


def parse_promql(expr: str) -> promql_parser.Expr:
    """Parse one expression (ValueError names what is wrong)."""
    return promql_parser.parse(expr)


def metric_names_in(expr: str) -> set[str]:
    found: set[str] = set()
    promql_parser.walk(parse_promql(expr),
                       lambda node: found.add(node.name) if isinstance(node, promql_parser.VectorSelector)
                       and node.name else None)
    return found


_VAR = re.compile(r"\$(\$|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


def compose_variables(text: str) -> set[str]:
    """The ${VAR} names a compose file interpolates ($$ is a literal $)."""
    return {m.group(2) or m.group(5) for m in _VAR.finditer(text) if m.group(1) != "$"}


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's interpolation: ${VAR}, ${VAR:-default}, ${VAR:?error}, $$. A missing
    required variable raises KeyError with its message, as `docker compose config` stops."""

    def one(m: re.Match) -> str:
        if m.group(1) == "$":
            return "$"
        name = m.group(2) or m.group(5)
        value = env.get(name)
        op, arg = m.group(3), m.group(4)
        if op in (":?", "?") and not value:
            raise KeyError(f"{name}: {arg}")
        if op in (":-", "-") and not value:
            return arg
        return value or ""

    return _VAR.sub(one, text)
