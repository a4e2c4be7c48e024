"""Review requests on any label (a proposed move with a note that another
editor decides), the prompt-wide list the history page shows, the labels list's
last move, and the history page's Labels panel for each role."""

import pytest

from sharing.models import AuditEvent

pytestmark = pytest.mark.django_db


def _base(prompt):
    return f"/api/prompts/{prompt.pk}/labels/production"


def test_should_request_a_review_of_an_unprotected_label_and_move_it_on_approval(prompt, team):
    clients, (v1, v2, _) = team
    base = _base(prompt)
    asked = clients["alice"].post(f"{base}/pending", {"version": str(v2.pk), "expected": str(v1.pk),
                                                      "note": "fixes the greeting"}, format="json")
    assert asked.status_code == 202, asked.json()
    pending = asked.json()
    assert (pending["note"], pending["requested_by"], pending["status"]) == ("fixes the greeting", "alice",
                                                                             "pending")
    assert clients["owner"].get(base).json()["version"]["id"] == str(v1.pk)  # a request, not a move
    listed = clients["vic"].get(f"/api/prompts/{prompt.pk}/pending-moves?status=pending").json()["results"]
    assert [(p["id"], p["label"], p["note"]) for p in listed] == [(pending["id"], "production",
                                                                    "fixes the greeting")]

    approve = f"{base}/pending/{pending['id']}/approve"
    assert clients["alice"].post(approve, {}, format="json").json()["error"]["code"] == \
        "second_editor_required"
    done = clients["bob"].post(approve, {"reason": "ok"}, format="json").json()
    assert (done["status"], done["decided_by"]) == ("approved", "bob")
    assert clients["owner"].get(base).json()["version"]["id"] == str(v2.pk)
    waiting = clients["owner"].get(f"/api/prompts/{prompt.pk}/pending-moves?status=pending")
    assert waiting.json()["results"] == []
    events = {e.action: e.detail for e in AuditEvent.objects.filter(target="label:production").order_by("id")}
    assert events["label.move_requested"]["note"] == "fixes the greeting"
    assert events["label.move_approved"]["requested_by"] == "alice"
    assert events["label.move"]["to_version"] == str(v2.pk)


def test_should_refuse_bad_review_requests_with_a_code_at_the_field(prompt, team):
    clients, (v1, v2, _) = team
    base = _base(prompt)
    cases = [
        (clients["vic"], base, {"version": str(v2.pk), "expected": str(v1.pk)}, 403, "forbidden"),
        (clients["alice"], base, {"version": str(v2.pk), "expected": str(v2.pk)}, 409, "label_conflict"),
        (clients["alice"], base, {"version": str(v2.pk), "expected": str(v1.pk), "note": "x" * 501}, 400,
         None),
        (clients["alice"], f"/api/prompts/{prompt.pk}/labels/staging",
         {"version": str(v2.pk), "expected": str(v1.pk)}, 404, "label_not_found"),
    ]
    for client, url, body, status, code in cases:
        response = client.post(f"{url}/pending", body, format="json")
        assert response.status_code == status, (body, response.json())
        if code:
            assert response.json()["error"]["code"] == code
    bad = clients["vic"].get(f"/api/prompts/{prompt.pk}/pending-moves?status=maybe")
    assert (bad.status_code, bad.json()["error"]["field"]) == (400, "status")


def test_should_list_labels_with_who_moved_them_last(prompt, team):
    clients, (v1, v2, _) = team
    base = _base(prompt)
    assert clients["alice"].post(f"{base}/move", {"version": str(v2.pk), "expected": str(v1.pk)},
                                 format="json").status_code == 200
    listed = clients["vic"].get(f"/api/prompts/{prompt.pk}/labels").json()["results"]
    assert [(label["name"], label["version"], label["moved_by"]) for label in listed] == [
        ("production", str(v2.pk), "alice")]
    assert listed[0]["moved_at"] is not None


def test_should_give_the_labels_panel_the_role_and_the_user(prompt, team):
    clients, _ = team
    for who, role in (("alice", "editor"), ("vic", "viewer")):
        page = clients[who].get(f"/prompts/{prompt.pk}/history/").content.decode()
        assert f'"role": "{role}"' in page and f'"user": "{who}"' in page
        assert 'id="labels-table"' in page and 'id="reviews-table"' in page
