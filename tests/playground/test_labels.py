import pytest

from playground.models import LabelMove
from tests.factories import LabelFactory, PromptVersionFactory

pytestmark = pytest.mark.django_db


def _move(client, prompt, name, version, expected):
    return client.post(f"/api/prompts/{prompt.pk}/labels/{name}/move",
                       {"version": str(version.pk), "expected": str(expected.pk) if expected else None},
                       format="json")


@pytest.fixture
def chain(prompt):
    v1 = PromptVersionFactory(prompt=prompt, body="one\n")
    v2 = PromptVersionFactory(prompt=prompt, parent=v1, body="two\n")
    v3 = PromptVersionFactory(prompt=prompt, parent=v2, body="three\n")
    return v1, v2, v3


def test_label_moves_by_compare_and_set_and_stale_expectation_gets_409(auth_client, prompt, chain):
    v1, v2, v3 = chain
    assert _move(auth_client, prompt, "production", v1, None).status_code == 200
    assert _move(auth_client, prompt, "production", v2, v1).status_code == 200
    stale = _move(auth_client, prompt, "production", v3, v1)
    assert stale.status_code == 409
    error = stale.json()["error"]
    assert error["code"] == "label_conflict" and error["current_version"] == str(v2.pk)
    assert _move(auth_client, prompt, "production", v3, None).status_code == 409  # exists already
    got = auth_client.get(f"/api/prompts/{prompt.pk}/labels/production").json()
    assert got["version"]["id"] == str(v2.pk) and got["version"]["body"] == "two\n"
    history = auth_client.get(f"/api/prompts/{prompt.pk}/labels/production/history").json()["results"]
    assert [(h["from_version"], h["to_version"]) for h in history] == [
        (str(v1.pk), str(v2.pk)), (None, str(v1.pk))]
    assert all(h["actor"] == prompt.owner.username for h in history)


def test_undo_and_redo_move_the_pointer_and_are_recorded(auth_client, prompt, chain):
    v1, v2, v3 = chain
    LabelFactory(version=v1, name="staging")
    _move(auth_client, prompt, "staging", v2, v1)
    _move(auth_client, prompt, "staging", v3, v2)
    base = f"/api/prompts/{prompt.pk}/labels/staging"
    assert auth_client.post(f"{base}/undo", {}, format="json").json()["version"] == str(v2.pk)
    assert auth_client.post(f"{base}/undo", {}, format="json").json()["version"] == str(v1.pk)
    nothing = auth_client.post(f"{base}/undo", {}, format="json")
    assert nothing.status_code == 409 and nothing.json()["error"]["code"] == "nothing_to_undo"
    assert auth_client.post(f"{base}/redo", {}, format="json").json()["version"] == str(v2.pk)
    stale = auth_client.post(f"{base}/redo", {"expected": str(v1.pk)}, format="json")
    assert stale.status_code == 409
    assert auth_client.post(f"{base}/redo", {}, format="json").json()["version"] == str(v3.pk)
    assert auth_client.post(f"{base}/redo", {}, format="json").status_code == 409
    # A new move clears the redo stack, like any editor.
    auth_client.post(f"{base}/undo", {}, format="json")
    _move(auth_client, prompt, "staging", v1, v2)
    assert auth_client.post(f"{base}/redo", {}, format="json").json()["error"]["code"] == "nothing_to_redo"
    kinds = list(LabelMove.objects.filter(label__name="staging").values_list("kind", flat=True))
    assert kinds == ["move", "move", "move", "undo", "undo", "redo", "redo", "undo", "move"]


def test_label_names_and_targets_are_validated(auth_client, prompt, chain):
    from tests.factories import PromptFactory

    bad = _move(auth_client, prompt, "Bad Name!", chain[0], None)
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "name"
    foreign = PromptVersionFactory(prompt=PromptFactory(owner=prompt.owner))
    response = _move(auth_client, prompt, "production", foreign, None)
    assert response.status_code == 404 and response.json()["error"]["field"] == "version"
    assert LabelMove.objects.count() == 0
    missing = auth_client.get(f"/api/prompts/{prompt.pk}/labels/nope")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "label_not_found"


def test_removing_a_label_is_for_editors_audited_and_then_the_label_is_not_found(auth_client, api_client,
                                                                                 prompt, chain):
    from sharing.models import AuditEvent, Grant, GrantRole
    from tests.factories import UserFactory

    v1, v2, _ = chain
    LabelFactory(version=v2, name="production")
    base = f"/api/prompts/{prompt.pk}/labels/production"
    viewer = UserFactory()
    Grant.objects.create(prompt=prompt, user=viewer, role=GrantRole.VIEWER, created_by=prompt.owner)
    api_client.force_login(viewer)
    assert api_client.delete(base).json()["error"]["code"] == "forbidden"
    bad = auth_client.delete(f"{base}?expected=nope")
    assert (bad.status_code, bad.json()["error"]["field"]) == (400, "expected")
    stale = auth_client.delete(f"{base}?expected={v1.pk}")
    assert stale.status_code == 409 and stale.json()["error"]["current_version"] == str(v2.pk)
    assert auth_client.delete(f"{base}?expected={v2.pk}").status_code == 204
    gone = auth_client.get(base)
    assert (gone.status_code, gone.json()["error"]["code"]) == (404, "label_not_found")
    assert auth_client.delete(base).status_code == 404
    event = AuditEvent.objects.get(action="label.delete")
    assert event.detail == {"from_version": str(v2.pk), "to_version": None}
    assert event.target == "label:production"
