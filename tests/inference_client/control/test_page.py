"""The control plane's page: staff only; the document and its diff, versions,
rollouts with their figures, and the buttons."""

import datetime

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone

from inference_client.control import rollout as ro
from inference_client.models import ControlEvent, Rollout
from tests.factories import UserFactory


@pytest.fixture
def staff(db):
    """Staff with the publish_config permission (the actions need it)."""
    user = UserFactory(is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="publish_config"))
    client = Client()
    client.force_login(user)
    return client


def test_should_hide_the_page_from_anyone_but_staff(db):
    client = Client()
    assert client.get("/control/").status_code == 404
    client.force_login(UserFactory())
    assert client.get("/control/").status_code == 404
    assert client.post("/control/action", {"action": "config_rollback"}).status_code == 404


def test_should_show_the_document_versions_and_rollouts_and_act_on_them(staff, served):
    rollout = ro.rollout_start(model="fixed-cost", version="v2", steps=[10, 100], actor="alice")
    Rollout.objects.filter(pk=rollout.pk).update(figures={
        "canary": {"requests": 40, "errors": 12, "error_rate": 0.3, "p99_ms": 80},
        "stable": {"requests": 360, "errors": 0, "error_rate": 0.0, "p99_ms": 60}})
    page = staff.get("/control/").content.decode()
    assert "Config document 1" in page and "models.fixed-cost.versions" in page  # the diff against 0
    assert 'data-version="v2"' in page and f'data-rollout="{rollout.pk}"' in page
    assert "40 req, 0.300 err, p99 80 ms" in page and "360 req, 0.000 err" in page

    staff.post("/control/action", {"action": "pause", "rollout": rollout.pk})
    rollout.refresh_from_db()
    assert rollout.requested == "pause"
    assert ControlEvent.objects.filter(action="rollout_pause_requested").exists()

    reply = staff.post("/control/action", {"action": "start", "model": "fixed-cost", "version": "v2",
                                            "steps": "10,100"}, follow=True)
    assert "already in progress" in reply.content.decode()  # the second operator's conflict, shown
    reply = staff.post("/control/action", {"action": "start", "model": "fixed-cost", "version": "v2",
                                            "steps": "ten"}, follow=True)
    assert "comma-separated percentages" in reply.content.decode()


def test_should_surface_a_rollout_whose_driver_stopped_and_abort_it(staff, served):
    rollout = ro.rollout_start(model="fixed-cost", version="v2", steps=[10, 100], actor="alice",
                               driver="h:1:ab")
    page = staff.get("/control/").content.decode()
    assert "Its driver stopped" not in page and 'value="pause"' in page
    lapsed = timezone.now() - datetime.timedelta(seconds=1)
    Rollout.objects.filter(pk=rollout.pk).update(lease_expires_at=lapsed)
    page = staff.get("/control/").content.decode()
    assert "Its driver stopped (<code>h:1:ab</code>" in page
    assert 'value="take_over">Resume here' in page and 'value="abort">Abort' in page
    reply = staff.post("/control/action", {"action": "pause", "rollout": rollout.pk}, follow=True)
    assert "resume it (take it over) or abort it" in reply.content.decode()

    staff.post("/control/action", {"action": "abort", "rollout": rollout.pk})
    rollout.refresh_from_db()
    # no step was published: nothing to undo, it fails
    assert rollout.state == "failed" and "aborted by" in rollout.reason
    events = ControlEvent.objects.filter(target__startswith=f"rollout:{rollout.pk}:")
    assert [e.action for e in events][:2] == ["rollout_failed", "rollout_taken_over"]
