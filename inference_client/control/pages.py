"""The control plane's page (staff only): models and versions, which worker has
which version in which state, the current config document with its diff against
the parent, rollouts with their canary-vs-stable figures, and the buttons to
start, pause, resume, promote or roll back; a rollout whose driver stopped
(lease lapsed) is shown as such, with Resume here (this process takes it over
from its recorded step) and Abort (roll back what it published). A stranger
(not staff) gets 404; every action publishes or steers what is published, so it
also needs the permission PUBLISH_PERMISSION (staff without it: 403, no buttons)."""

from __future__ import annotations

import logging
import threading
from urllib.parse import urlencode

from django.core.exceptions import PermissionDenied
from django.db import close_old_connections
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from inference_client.control import documents
from inference_client.control import rollout as ro
from inference_client.models import ControlEvent, ModelVersion, Rollout
from inference_protocol import config, config_document
from inference_protocol.backend import live_workers
from inference_protocol.catalog import split_served
from inference_protocol.heartbeat import read_nodes

logger = logging.getLogger("inference.rollout")

PUBLISH_PERMISSION = "inference_client.publish_config"


def _staff(request) -> None:
    if not (request.user.is_authenticated and request.user.is_staff):
        raise Http404


def worker_states(model: str) -> dict[str, list[dict]]:
    """version -> [{worker, state, percent, reason, config, engine_config,
    engine_error}] from heartbeats (ready: the document it applies, the one its
    engine was built from, a newer spec's build failure) and
    node records (downloading / verifying / present / failed)."""
    out: dict[str, dict[str, dict]] = {}
    try:
        nodes, records = read_nodes(), live_workers()
    except Exception:  # no Redis (embedded default) or Redis away: nothing to show
        nodes, records = [], []
    for node in nodes:
        for label, entry in (node.get("checkpoints") or {}).items():
            m, version = split_served(label)
            if m == model and version:
                out.setdefault(version, {})[node["worker"]] = {
                    "worker": node["worker"], "state": entry.get("state"), "percent": entry.get("percent"),
                    "reason": entry.get("reason")}
    for record in records:
        m, version = split_served(record["model"])
        if m == model and version and record.get("healthy", True):
            row = out.setdefault(version, {}).setdefault(record["worker"], {"worker": record["worker"]})
            row.update(state="ready", config=record.get("config"), engine_config=record.get("engine_config"),
                       engine_error=record.get("engine_error"))
    return {v: sorted(rows.values(), key=lambda r: r["worker"]) for v, rows in out.items()}


@require_http_methods(["GET"])
def control_page(request):
    _staff(request)
    latest = documents.latest_document()
    content = documents.document_content(latest.number) if latest else documents.current_content()
    parent = documents.document_content(latest.parent or 0) if latest else content
    snapshot = config.ConfigSnapshot.of(0, None, content)
    published = {}
    for row in ModelVersion.objects.order_by("model", "created_at"):
        published.setdefault(row.model, []).append(row.version)
    models = [{"name": name, "engine": spec.get("engine"), "weights": snapshot.versions(name),
               "published": published.get(name, []), "workers": worker_states(name)}
              for name, spec in content["models"].items()]
    return render(request, "control/index.html", {
        "document": latest, "number": latest.number if latest else 0,
        "diff": documents.content_diff(parent, content),
        "applied": config.current().number, "models": models,
        "rollouts": Rollout.objects.all()[:10], "events": ControlEvent.objects.all()[:30],
        "error": request.GET.get("error", ""), "can_publish": request.user.has_perm(PUBLISH_PERMISSION)})


def _run_in_background(rollout: Rollout) -> None:
    def run():
        try:
            ro.rollout_run(rollout)
        except Exception:
            logger.exception("rollout %s stopped on an error", rollout.pk)
        finally:
            close_old_connections()
    threading.Thread(target=run, name=f"rollout-{rollout.pk}", daemon=True).start()


@require_http_methods(["POST"])
def control_action(request):
    _staff(request)
    if not request.user.has_perm(PUBLISH_PERMISSION):
        raise PermissionDenied("publishing config needs the publish_config permission")
    actor = request.user.get_username()
    action = request.POST.get("action", "")
    try:
        if action == "start":
            try:
                steps = [int(s) for s in request.POST.get("steps", "").split(",")]
            except ValueError:
                raise ro.RolloutError("invalid_steps",
                                      "steps: comma-separated percentages, e.g. 10,50,100") from None
            rollout = ro.rollout_start(model=request.POST.get("model", ""),
                                       version=request.POST.get("version", ""), steps=steps, actor=actor)
            _run_in_background(rollout)
        elif action == "config_rollback":
            documents.config_rollback(actor=actor, reason=request.POST.get("reason", ""))
        else:
            try:
                rollout_id = int(request.POST.get("rollout", ""))
            except ValueError:
                raise ro.RolloutError("invalid_rollout", "no rollout named") from None
            if action == "take_over":  # a stale rollout, driven on from this process
                rollout = ro.rollout_take_over(rollout_id=rollout_id, actor=actor)
                if rollout.state == Rollout.State.PAUSED:
                    ro.rollout_request(rollout_id=rollout_id, action="resume", actor=actor)
                _run_in_background(rollout)
            elif action == "abort":
                ro.rollout_abort(rollout_id=rollout_id, actor=actor)
            else:
                ro.rollout_request(rollout_id=rollout_id, action=action, actor=actor)
    except Rollout.DoesNotExist:
        return redirect("/control/?error=no+such+rollout")
    except (ro.RolloutError, config_document.ConfigError, documents.ConfigConflict) as exc:
        return redirect("/control/?" + urlencode({"error": str(exc)}))
    return redirect("/control/")
