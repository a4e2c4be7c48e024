"""Protected labels: only editors move them, only the owner removes them or
changes protection; with require_approval a move is a request that a second
editor approves (or rejects), listed for the history page, audited."""

import pytest

from playground import services
from playground.models import LabelMove, PendingLabelMove
from sharing.models import AuditEvent

pytestmark = pytest.mark.django_db


def _base(prompt):
    return f"/api/prompts/{prompt.pk}/labels/production"


def test_should_let_only_the_owner_protect_and_remove_a_protected_label(prompt, team):
    clients, (v1, v2, _) = team
    base = _base(prompt)
    assert clients["alice"].post(f"{base}/protect", {"protected": True}, format="json").status_code == 403
    bad = clients["owner"].post(f"{base}/protect", {"protected": False, "require_approval": True},
                                format="json")
    assert bad.json()["error"]["code"] == "invalid_request"
    got = clients["owner"].post(f"{base}/protect", {"protected": True}, format="json").json()
    assert (got["protected"], got["require_approval"]) == (True, False)
    # Protected without approval: editors still move it, only the owner removes it.
    moved = clients["alice"].post(f"{base}/move", {"version": str(v2.pk), "expected": str(v1.pk)},
                                  format="json")
    assert moved.status_code == 200
    refused = clients["alice"].delete(base)
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "label_protected")
    assert clients["vic"].post(f"{base}/move", {"version": str(v1.pk), "expected": str(v2.pk)},
                               format="json").json()["error"]["code"] == "forbidden"
    assert clients["owner"].delete(base).status_code == 204


def test_should_need_a_second_editor_to_approve_a_move_and_audit_it(prompt, team):
    clients, (v1, v2, v3) = team
    base = _base(prompt)
    clients["owner"].post(f"{base}/protect", {"protected": True, "require_approval": True}, format="json")
    asked = clients["alice"].post(f"{base}/move", {"version": str(v2.pk), "expected": str(v1.pk)},
                                  format="json")
    assert asked.status_code == 202
    pending = asked.json()["pending"]
    assert (pending["status"], pending["requested_by"]) == ("pending", "alice")
    assert pending["to_version"] == str(v2.pk)
    assert clients["owner"].get(base).json()["version"]["id"] == str(v1.pk)  # not moved yet
    for step in ("undo", "redo"):
        assert clients["owner"].post(f"{base}/{step}", {}, format="json").json()["error"]["code"] == \
            "approval_required"
    split = clients["owner"].post(f"{base}/split", {"expected": str(v1.pk), "variants": [
        {"version": str(v1.pk), "weight": 50}, {"version": str(v2.pk), "weight": 50}]}, format="json")
    assert split.json()["error"]["code"] == "approval_required"
    with pytest.raises(Exception) as direct:
        services.label_move(prompt=prompt, name="production", version_id=v3.pk, expected_version_id=v1.pk,
                            actor=prompt.owner)
    assert direct.value.code == "approval_required"

    approve = f"{base}/pending/{pending['id']}/approve"
    own = clients["alice"].post(approve, {}, format="json")
    assert (own.status_code, own.json()["error"]["code"]) == (403, "second_editor_required")
    assert clients["vic"].post(approve, {}, format="json").json()["error"]["code"] == "forbidden"
    done = clients["bob"].post(approve, {"reason": "looks right"}, format="json").json()
    assert (done["status"], done["decided_by"], done["reason"]) == ("approved", "bob", "looks right")
    assert clients["owner"].get(base).json()["version"]["id"] == str(v2.pk)
    assert LabelMove.objects.filter(label__name="production").latest("id").actor.username == "bob"
    assert clients["bob"].post(approve, {}, format="json").json()["error"]["code"] == "already_decided"
    actions = list(AuditEvent.objects.filter(target="label:production").values_list("action", flat=True))
    assert {"label.protect", "label.move_requested", "label.move", "label.move_approved"} <= set(actions)


def test_should_reject_a_request_the_label_has_moved_past_and_list_pending_moves(
        prompt, team):
    clients, (v1, v2, v3) = team
    base = _base(prompt)
    clients["owner"].post(f"{base}/protect", {"protected": True, "require_approval": True}, format="json")
    first = clients["alice"].post(f"{base}/move", {"version": str(v2.pk), "expected": str(v1.pk)},
                                  format="json").json()["pending"]
    second = clients["alice"].post(f"{base}/move", {"version": str(v3.pk), "expected": str(v1.pk)},
                                   format="json").json()["pending"]
    third = clients["bob"].post(f"{base}/move", {"version": str(v3.pk), "expected": str(v1.pk)},
                                format="json").json()["pending"]
    waiting = clients["bob"].get(f"/api/prompts/{prompt.pk}/pending-moves?status=pending").json()["results"]
    assert [p["id"] for p in waiting] == [third["id"], second["id"], first["id"]]  # what the page lists
    approved = clients["bob"].post(f"{base}/pending/{first['id']}/approve", {}, format="json")
    assert approved.status_code == 200 and clients["owner"].get(base).json()["version"]["id"] == str(v2.pk)
    stale = clients["bob"].post(f"{base}/pending/{second['id']}/approve", {}, format="json")
    assert (stale.status_code, stale.json()["error"]["code"]) == (409, "label_conflict")
    second_row = PendingLabelMove.objects.get(pk=second["id"])
    assert (second_row.status, second_row.reason) == ("rejected", "the label moved since the request")
    rejected = clients["alice"].post(f"{base}/pending/{third['id']}/reject", {"reason": "not yet"},
                                     format="json")
    assert rejected.json()["status"] == "rejected"
    assert clients["owner"].get(base).json()["version"]["id"] == str(v2.pk)
    listed = clients["vic"].get(f"{base}/pending").json()["results"]
    assert [(p["id"], p["status"]) for p in listed] == [
        (third["id"], "rejected"), (second["id"], "rejected"), (first["id"], "approved")]
