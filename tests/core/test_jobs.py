"""The background-job driver (core.jobs), once for every kind: claim, one owner
across drivers, heartbeat, resume after a driver died without redoing a step,
cancel, per-user slots, no connection held while waiting. On PostgreSQL, with a
virtual clock wherever time matters.

The job here counts: each step does the next number and records it in the
row's ``completed`` (the recorded progress); ``start`` resumes from it."""

import datetime
import threading

import pytest
from django.db import connection, transaction
from django.utils import timezone

from core.error_codes import DomainError
from core.jobs import BUSY, CANCELLED, Job, JobKind, LeaseLost, Slots, drive, request_cancel, waiting
from evals.models import Dataset, DatasetVersion, EvalRun, RunStatus

pytestmark = pytest.mark.needs_services
LEASE_S = 30


class Clock:
    """Virtual time: ``sleep`` moves it on at once, noting whether the
    sleeping thread held a database connection."""

    def __init__(self):
        self.at = timezone.now()
        self.slept_holding: list[bool] = []

    def now(self) -> datetime.datetime:
        return self.at

    def sleep(self, seconds: float) -> None:
        self.slept_holding.append(connection.connection is not None)
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        self.at += datetime.timedelta(seconds=seconds)


class Counting:
    """The kind's functions, and what each step did (across drivers)."""

    def __init__(self):
        self.done: list[int] = []
        self.before_step = lambda job, number: None  # a test's hook: die, cancel, wait

    def start(self, job: Job) -> dict:
        job.write(status=RunStatus.RUNNING)
        run = EvalRun.objects.get(pk=job.pk)
        return {"next": run.completed + 1, "total": run.total}

    def step(self, job: Job, work: dict) -> str | None:
        if work["next"] > work["total"]:
            return RunStatus.DONE
        self.before_step(job, work["next"])
        self.done.append(work["next"])
        job.write(completed=work["next"])
        work["next"] += 1
        return None

    def finish(self, job: Job, work: dict, outcome: str) -> str:
        job.end(status=outcome, finished_at=timezone.now())
        return outcome


@pytest.fixture
def counting(settings):
    settings.EVAL_LEASE_S = LEASE_S
    return Counting()


@pytest.fixture
def kind(counting):
    return JobKind(name="count", model=EvalRun, active=(RunStatus.QUEUED, RunStatus.RUNNING),
                   lease_setting="EVAL_LEASE_S", start=counting.start, step=counting.step,
                   finish=counting.finish, slots=Slots("owner", "EVAL_MAX_ACTIVE_RUNS", "counting"))


def _job(user, total=5) -> EvalRun:
    dataset = Dataset.objects.create(owner=user, name="d")
    version = DatasetVersion.objects.create(dataset=dataset, number=1)
    return EvalRun.objects.create(owner=user, dataset_version=version, total=total)


class Died(Exception):
    """A driver's process dying mid-job: its lease stays until it runs out."""


def test_a_driver_claims_a_job_steps_it_to_its_end_and_lets_the_lease_go(user, kind, counting):
    run = _job(user)
    assert waiting(kind, limit=10) == [run.pk]
    assert drive(kind, run.pk, owner="a") == RunStatus.DONE
    run.refresh_from_db()
    assert (run.status, run.completed, run.lease_until, counting.done) == ("done", 5, None, [1, 2, 3, 4, 5])
    assert drive(kind, run.pk, owner="b") == BUSY  # an ended job is no one's to claim
    assert waiting(kind, limit=10) == []


@pytest.mark.django_db(transaction=True)
def test_of_drivers_claiming_one_job_at_once_exactly_one_gets_it(user, kind):
    run = _job(user)
    start, won = threading.Barrier(8), []

    def claim(owner: str):
        try:
            start.wait()
            if Job(kind, run.pk, owner=owner).claim():
                won.append(owner)
        finally:
            connection.close()

    threads = [threading.Thread(target=claim, args=(f"driver-{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1
    assert EvalRun.objects.get(pk=run.pk).lease_owner == won[0]
    assert Job(kind, run.pk, owner=won[0]).claim()  # its holder may claim it again
    assert drive(kind, run.pk, owner="late") == BUSY


def test_a_heartbeat_extends_the_lease_and_fails_once_another_driver_took_it(user, kind):
    clock = Clock()
    run = _job(user)
    a = Job(kind, run.pk, owner="a", clock=clock)
    assert a.claim()
    assert EvalRun.objects.get(pk=run.pk).lease_until == clock.now() + datetime.timedelta(seconds=LEASE_S)
    clock.advance(LEASE_S - 1)
    assert not Job(kind, run.pk, owner="b", clock=clock).claim()
    assert a.heartbeat()
    assert EvalRun.objects.get(pk=run.pk).lease_until == clock.now() + datetime.timedelta(seconds=LEASE_S)
    clock.advance(LEASE_S + 1)  # a hung past its lease
    assert Job(kind, run.pk, owner="b", clock=clock).claim()
    assert not a.heartbeat() and not a.end(status="done")  # a writes nothing any more
    with pytest.raises(LeaseLost, match="no longer driven by a"):
        a.write(completed=99)
    assert EvalRun.objects.get(pk=run.pk).lease_owner == "b"


def test_a_job_whose_driver_died_resumes_once_its_lease_ran_out_without_redoing_a_step(user, kind, counting):
    clock = Clock()
    run = _job(user)

    def die_at_three(job, number):
        if number == 3 and job.owner == "a":
            raise Died

    counting.before_step = die_at_three
    with pytest.raises(Died):
        drive(kind, run.pk, owner="a", clock=clock)
    assert counting.done == [1, 2]
    clock.advance(LEASE_S - 1)
    assert waiting(kind, limit=10, clock=clock) == []
    assert drive(kind, run.pk, owner="b", clock=clock) == BUSY  # the dead driver's lease still runs
    clock.advance(2)
    assert waiting(kind, limit=10, clock=clock) == [run.pk]
    assert drive(kind, run.pk, owner="b", clock=clock) == RunStatus.DONE
    assert counting.done == [1, 2, 3, 4, 5]
    assert EvalRun.objects.get(pk=run.pk).completed == 5


def test_a_driver_that_lost_its_lease_stops_at_its_next_heartbeat(user, kind, counting):
    clock = Clock()
    run = _job(user)

    def hang_at_two(job, number):
        if number == 2:  # a hangs past its lease; b takes over meanwhile
            clock.advance(LEASE_S + 1)
            assert Job(kind, run.pk, owner="b", clock=clock).claim()

    counting.before_step = hang_at_two
    with pytest.raises(LeaseLost, match="no longer driven by a"):
        drive(kind, run.pk, owner="a", clock=clock)  # its write after the hang is refused
    assert counting.done == [1, 2] and EvalRun.objects.get(pk=run.pk).completed == 1


def test_a_cancelled_job_stops_before_its_next_step_and_lets_its_lease_go(user, kind, counting):
    run = _job(user)

    def cancel_at_two(job, number):
        if number == 2:
            assert not request_cancel(kind, run.pk)  # held: the driver ends it

    counting.before_step = cancel_at_two
    assert drive(kind, run.pk, owner="a") == CANCELLED
    run.refresh_from_db()
    assert (run.status, run.completed, run.lease_until, counting.done) == ("cancelled", 2, None, [1, 2])
    unheld = _job(user)
    assert request_cancel(kind, unheld.pk)  # no driver holds it: the caller ends it at once


def test_a_user_past_the_kinds_slot_limit_is_refused_with_a_429(user, kind, settings):
    settings.EVAL_MAX_ACTIVE_RUNS = 1
    with transaction.atomic():
        kind.slot_check(user)
    run = _job(user)
    with pytest.raises(DomainError) as refused, transaction.atomic():
        kind.slot_check(user)
    assert (refused.value.status, refused.value.code) == (429, "too_many_active_jobs")
    assert refused.value.extra["setting"] == "EVAL_MAX_ACTIVE_RUNS" and "Retry-After" in refused.value.headers
    EvalRun.objects.filter(pk=run.pk).update(status=RunStatus.DONE)
    with transaction.atomic():
        kind.slot_check(user)  # an ended job frees its slot


@pytest.mark.django_db(transaction=True)
def test_a_driver_holds_no_database_connection_while_it_waits(user, kind, counting):
    clock = Clock()
    run = _job(user, total=3)
    counting.before_step = lambda job, number: job.wait(60)
    assert drive(kind, run.pk, owner="a", clock=clock) == RunStatus.DONE
    assert clock.slept_holding == [False, False, False]
    assert Job(kind, run.pk, owner="a", clock=clock).keep_going() is False  # ended: not renewed
    assert connection.connection is None  # keep_going gives the connection back too
