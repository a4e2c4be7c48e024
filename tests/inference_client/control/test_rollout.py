"""Canary rollouts without workers: the decision, bad input, the conflict of two
operators, waiting for a ready worker that never comes, and the driver's lease
(take-over only once it lapsed; a driver that lost it writes nothing)."""

import datetime

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.models import Q
from django.utils import timezone

from inference_client.control import documents
from inference_client.control import rollout as ro
from inference_client.control.canary import Figures, decide
from inference_client.models import ControlEvent, Rollout
from inference_client.stages.admit import choose_version

THRESHOLDS = {"max_error_rate_delta": 0.05, "max_p99_ratio": 1.5, "min_requests": 10}


@pytest.mark.any_profile
@pytest.mark.parametrize("canary, stable, verdict, words", [
    (Figures(100, 30, 50), Figures(900, 0, 50), "rollback", "error rate 30.0% vs stable 0.0%"),
    (Figures(100, 1, 200), Figures(900, 0, 50), "rollback", "p99 200 ms vs stable 50 ms"),
    (Figures(0, 0, 0), Figures(900, 0, 50), "rollback", "served no request"),
    (Figures(100, 2, 60), Figures(900, 9, 50), "continue", "within thresholds"),
])
def test_should_roll_back_on_a_regression_beyond_the_thresholds(canary, stable, verdict, words):
    assert decide(canary, stable, THRESHOLDS)[0] == verdict
    assert words in decide(canary, stable, THRESHOLDS)[1]


@pytest.mark.any_profile
def test_should_split_traffic_by_weight_among_ready_versions_only():
    weights = {"v1": 90, "v2": 10}
    picks = [choose_version(weights, frozenset({"v1", "v2"})) for _ in range(2000)]
    assert 100 < picks.count("v2") < 300
    assert {choose_version(weights, frozenset({"v1"})) for _ in range(50)} == {"v1"}
    assert choose_version(weights, frozenset()) is None
    assert choose_version({"v1": 0}, frozenset({"v1"})) is None


def test_should_refuse_bad_rollouts_with_a_clear_code(served):
    cases = [(dict(model="nope", version="v2", steps=[10, 100]), "model_not_found"),
             (dict(model="fixed-cost", version="v9", steps=[10, 100]), "version_not_published"),
             (dict(model="fixed-cost", version="v2", steps=[50, 10]), "invalid_steps"),
             (dict(model="fixed-cost", version="v2", steps=[10, 50]), "invalid_steps"),
             (dict(model="fixed-cost", version="v1", steps=[100]), "no_stable_version")]
    for kwargs, code in cases:
        with pytest.raises(ro.RolloutError) as err:
            ro.rollout_start(actor="ops", **kwargs)
        assert err.value.code == code, kwargs


def test_should_let_one_of_two_operators_start_a_rollout_of_a_model(served):
    first = ro.rollout_start(model="fixed-cost", version="v2", steps=[10, 100], actor="alice")
    with pytest.raises(ro.RolloutError) as err:
        ro.rollout_start(model="fixed-cost", version="v2", steps=[50, 100], actor="bob")
    assert err.value.code == "conflict"
    assert f"rollout {first.pk}" in str(err.value) and "alice" in str(err.value)


def test_should_wait_for_a_ready_worker_and_give_up_without_moving_traffic(served,
                                                                          django_capture_on_commit_callbacks):
    before = documents.latest_document().number
    with pytest.raises(CommandError, match="rollout failed"):
        call_command("deploy", "--model", "fixed-cost", "--version", "v2", "--steps", "10,100")
    rollout = Rollout.objects.get()
    assert rollout.state == Rollout.State.FAILED and "no worker was ready" in rollout.reason
    assert documents.latest_document().number == before  # no step was published
    assert ControlEvent.objects.filter(action="rollout_failed",
                                       target__startswith=f"rollout:{rollout.pk}:").exists()
    # it is not active any more: a new rollout may start
    assert ro.rollout_start(model="fixed-cost", version="v2", steps=[100], actor="ops").pk != rollout.pk


def lapse(rollout: Rollout) -> None:
    """As if its driver stopped renewing a second ago."""
    lapsed = timezone.now() - datetime.timedelta(seconds=1)
    Rollout.objects.filter(pk=rollout.pk).update(lease_expires_at=lapsed)


def test_should_take_a_rollout_over_only_once_its_drivers_lease_lapsed(served):
    rollout = ro.rollout_start(model="fixed-cost", version="v2", steps=[10, 100], actor="alice", driver="a")
    assert not rollout.stale
    with pytest.raises(ro.RolloutError) as err:
        ro.rollout_take_over(rollout_id=rollout.pk, actor="bob", driver="b")
    assert err.value.code == "lease_held" and "driven by a" in str(err.value)
    with pytest.raises(CommandError, match=r"waiting_for_ready, driven by a .*nothing to resume"):
        call_command("deploy", "--model", "fixed-cost", "--resume")
    lapse(rollout)
    # nothing would act on a request now: the operator is told to resume or abort
    with pytest.raises(ro.RolloutError) as err:
        ro.rollout_request(rollout_id=rollout.pk, action="pause", actor="bob")
    assert err.value.code == "stale"
    with pytest.raises(CommandError, match=r"\[stale\]"):
        call_command("deploy", "--model", "fixed-cost", "--promote")
    with pytest.raises(ro.RolloutError, match="its driver stopped .*--resume continues it, --rollback"):
        ro.rollout_start(model="fixed-cost", version="v2", steps=[100], actor="bob")
    taken = ro.rollout_take_over(rollout_id=rollout.pk, actor="bob", driver="b")
    assert taken.driver == "b" and not taken.stale
    event = ControlEvent.objects.get(action="rollout_taken_over")
    assert event.actor_name == "bob" and event.detail["previous_driver"] == "a"
    assert "b took over before its first step: a's lease lapsed" in event.detail["reason"]


def test_should_stop_a_driver_that_lost_its_lease_without_writing(served):
    rollout = ro.rollout_start(model="fixed-cost", version="v2", steps=[10, 50, 100], actor="alice",
                               driver="a")
    lease = ro._Lease(rollout)
    lease.set(state=Rollout.State.RUNNING)
    ro._publish_step(rollout, lease, 0)
    published = documents.latest_document().number
    lapse(rollout)
    ro.rollout_take_over(rollout_id=rollout.pk, actor="bob", driver="b")
    # a came back (it had hung): its next step, renewal or rollback is refused, and nothing was written
    for write in (lambda: ro._publish_step(rollout, lease, 1), lease.renew,
                  lambda: ro._roll_back(rollout, lease, "late", {})):
        with pytest.raises(ro.LeaseLost):
            write()
    assert documents.latest_document().number == published
    steps = ControlEvent.objects.filter(action="rollout_step", target__startswith=f"rollout:{rollout.pk}:")
    assert [(e.detail["percent"], e.detail["driver"]) for e in steps] == [(10, "a")]
    stale_copy = Rollout.objects.get(pk=rollout.pk)
    stale_copy.driver = "a"
    ro.rollout_run(stale_copy)  # its loop: stops at the first renewal
    rollout.refresh_from_db()
    assert (rollout.driver, rollout.state, rollout.step_index) == ("b", "running", 0)


def test_should_abort_a_stale_rollout_back_to_its_base_document(served):
    rollout = ro.rollout_start(model="fixed-cost", version="v2", steps=[10, 100], actor="alice", driver="a")
    base = rollout.base_document
    lease = ro._Lease(rollout)
    lease.set(state=Rollout.State.RUNNING)
    ro._publish_step(rollout, lease, 0)
    lapse(rollout)
    call_command("deploy", "--model", "fixed-cost", "--rollback", "--created-by", "carol")
    rollout.refresh_from_db()
    assert rollout.state == "rolled_back" and rollout.reason == "aborted by carol: its driver had stopped"
    assert documents.latest_document().content == documents.document_content(base)
    assert ControlEvent.objects.filter(action="rollout_rolled_back", detail__content_of=base).exists()


def test_should_resume_a_paused_rollout_whose_driver_stopped_and_judge_its_window(
        served, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        documents.config_publish(content=documents.content_with(documents.current_content(), [
            "rollout.window_s=0.5", "rollout.min_requests=0"]), actor="ops")
    rollout = ro.rollout_start(model="fixed-cost", version="v2", steps=[10, 100], actor="alice", driver="a")
    lease = ro._Lease(rollout)
    lease.set(state=Rollout.State.RUNNING)
    ro._publish_step(rollout, lease, 0)
    lease.set(state=Rollout.State.PAUSED)
    lapse(rollout)
    with pytest.raises(CommandError, match="rollout rolled_back"):
        call_command("deploy", "--model", "fixed-cost", "--resume", "--created-by", "bob")
    rollout.refresh_from_db()
    # taken over, resumed (unpaused), and judged on a window of its own: no worker served the canary
    assert rollout.reason == "the canary served no request in the window" and rollout.driver != "a"
    events = ControlEvent.objects.filter(Q(target=f"rollout:{rollout.pk}") |
                                         Q(target__startswith=f"rollout:{rollout.pk}:")).order_by("id")
    actions = [e.action for e in events]
    assert actions[-4:] == ["rollout_taken_over", "rollout_resume_requested", "rollout_resumed",
                            "rollout_rolled_back"]
