"""Config documents: an older document, still validly signed (replayed into Redis,
or a Redis restored from a backup), was applied again by any process that had
restarted, since a restart began at document 0. The newest applied document is
now a floor kept across restarts (a file, Redis, the control plane's database).
And publishing needed only is_staff: it now needs the publish_config permission."""

import dataclasses
import uuid

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from inference_client.control import documents
from inference_client.models import ConfigDocumentRecord
from inference_protocol import config, config_document, config_floor
from inference_protocol.config_floor import FileFloor, RedisFloor, floor_key
from inference_protocol.signing import generate_keypair
from tests.factories import UserFactory

PRIVATE, PUBLIC = generate_keypair()
CONTENT = {
    "models": {"m": {"engine": "fixed_cost", "max_inputs": 4, "call_s": 0.01}},
    "rate_limits": {"free": {"requests_per_min": 60, "tokens_per_min": 40000},
                    "paid": {"requests_per_min": 3000, "tokens_per_min": 2000000}},
    "capacity": {k: ({"green": 1.5, "yellow": 1.0, "red": 0.9} if k in ("headroom", "free_share") else 1)
                 for k in config_document.CAPACITY_KEYS},
    "rollout": {k: 1 for k in config_document.ROLLOUT_KEYS},
}


def doc(number: int, free_rpm: int = 60) -> config_document.ConfigDocument:
    content = {**CONTENT, "rate_limits": {**CONTENT["rate_limits"],
                                          "free": {"requests_per_min": free_rpm, "tokens_per_min": 40000}}}
    return config_document.ConfigDocument(number=number, parent=number - 1, content=content,
                                 created_at="2026-12-01T00:00:00+00:00", created_by="test").signed(PRIVATE)


def node(stores):
    """A process's config state; a new one is that process after a restart."""
    return config.ConfigState(lambda: CONTENT, lambda: PUBLIC, lambda: stores)


def _assert_floor_holds(stores):
    before = node(stores)
    assert before.offer(doc(3, free_rpm=30))
    restarted = node(stores)
    assert restarted.snapshot.number == 0
    assert not restarted.offer(doc(2))  # older, validly signed: a replay
    assert "older than the floor 3" in restarted.last_refusal
    assert not restarted.offer(doc(3, free_rpm=999))  # another document numbered 3
    assert "not the document 3" in restarted.last_refusal
    assert restarted.snapshot.number == 0
    assert restarted.offer(doc(3, free_rpm=30))  # the one applied before: applied again
    assert restarted.snapshot.rate_limits["free"]["requests_per_min"] == 30
    assert restarted.offer(doc(4)) and node(stores).offer(doc(4))
    assert not node(stores).offer(doc(3, free_rpm=30))


@pytest.mark.any_profile
def test_a_node_keeps_its_floor_in_a_file_across_a_restart(tmp_path):
    _assert_floor_holds([FileFloor(tmp_path / "floor.json")])


@pytest.mark.needs_services
def test_nodes_keep_their_floor_in_redis_across_a_restart(settings):
    from core.redis import get_redis

    _assert_floor_holds([RedisFloor(get_redis, floor_key(f"sec-{uuid.uuid4().hex[:8]}"))])


@pytest.mark.any_profile
def test_an_unreadable_floor_refuses_documents_until_it_can_be_read(tmp_path):
    path = tmp_path / "floor.json"
    path.write_text("{torn")
    state = node([FileFloor(path)])
    assert not state.offer(doc(1)) and "floor cannot be read" in state.last_refusal
    path.write_text('{"number": 0, "digest": ""}')
    assert state.offer(doc(1))


@pytest.fixture
def namespace(settings):
    settings.CONFIG_NAMESPACE = f"config-sec-{uuid.uuid4().hex[:8]}"
    config.state().reset()
    yield settings.CONFIG_NAMESPACE
    config.state().reset()


@pytest.mark.django_db(transaction=True)  # the floor is read on a connection of its own
def test_the_control_plane_never_applies_an_older_published_document_after_a_restart(
        namespace, settings, django_capture_on_commit_callbacks, monkeypatch):
    monkeypatch.setattr(config_floor, "_extra_stores", [documents.PublishedFloor()])  # as config/asgi.py
    base = config.bootstrap_content(settings)
    with django_capture_on_commit_callbacks(execute=True):
        first = documents.config_publish(content=documents.content_with(
            base, ["rate_limits.free.requests_per_min=1000"]), actor="ops")
    with django_capture_on_commit_callbacks(execute=True):
        documents.config_publish(content=documents.content_with(
            base, ["rate_limits.free.requests_per_min=5"]), actor="ops")
    assert config.current().number == 2
    if settings.REDIS_URL:  # whoever replays into Redis can also drop its floor
        from core.redis import get_redis

        get_redis().delete(floor_key())
    config.state().reset()  # the restart: back on document 0
    replay = config_document.ConfigDocument.from_json(first.document)
    assert not config.state().offer(replay)
    assert "older than the floor 2" in config.state().last_refusal
    assert config.state().snapshot.number == 0
    documents.config_rebroadcast()  # the newest stored one still applies
    assert config.state().snapshot.number == 2
    assert config.state().snapshot.rate_limits["free"]["requests_per_min"] == 5


@pytest.mark.any_profile
@pytest.mark.django_db
def test_a_node_process_keeps_its_floor_in_the_configured_file(namespace, settings, tmp_path):
    settings.CONFIG_FLOOR_FILE = str(tmp_path / "node-floor.json")
    signed = config_document.ConfigDocument(number=7, parent=6, content=config.bootstrap_content(settings),
                                   created_at="t", created_by="ops").signed(settings.CONFIG_SIGNING_KEY)
    assert config.state().offer(signed), config.state().last_refusal
    config.state().reset()  # the restart
    older = dataclasses.replace(signed, number=6, parent=5).signed(settings.CONFIG_SIGNING_KEY)
    assert not config.state().offer(older)
    assert "older than the floor 7" in config.state().last_refusal


# ---- publishing needs the permission ------------------------------------------------

def _client(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def published(db, namespace, settings, django_capture_on_commit_callbacks):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    base = config.bootstrap_content(settings)
    for rpm in (7, 8):
        with django_capture_on_commit_callbacks(execute=True):
            documents.config_publish(content=documents.content_with(
                base, [f"rate_limits.free.requests_per_min={rpm}"]), actor="ops")


def _publisher():
    user = UserFactory(is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="publish_config",
                                                     content_type__app_label="inference_client"))
    return user


@pytest.mark.parametrize(("who", "status", "published_after"), [
    ("anonymous", 404, 2), ("stranger", 404, 2), ("staff", 403, 2),
    ("publisher", 302, 3), ("superuser", 302, 3)])
def test_publishing_from_the_control_page_needs_the_permission(published, who, status, published_after,
                                                               django_capture_on_commit_callbacks):
    users = {"anonymous": lambda: None, "stranger": UserFactory, "staff": lambda: UserFactory(is_staff=True),
             "publisher": _publisher, "superuser": lambda: UserFactory(is_staff=True, is_superuser=True)}
    user = users[who]()
    client = _client(user) if user else Client()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/control/action", {"action": "config_rollback", "reason": "x"})
    assert response.status_code == status
    assert ConfigDocumentRecord.objects.count() == published_after
    for action in ("start", "pause", "abort"):  # every action steers what is published
        assert client.post("/control/action", {"action": action, "rollout": "1"}).status_code in (
            (status,) if status != 302 else (302,))


def test_the_page_shows_staff_without_the_permission_no_publishing_button(published):
    page = _client(UserFactory(is_staff=True)).get("/control/").content.decode()
    assert "Config document 2" in page
    assert 'id="config-rollback"' not in page and 'id="rollout-form"' not in page
    page = _client(_publisher()).get("/control/").content.decode()
    assert 'id="config-rollback"' in page and 'id="rollout-form"' in page
