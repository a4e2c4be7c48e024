"""A prompt's whole history exported as one JSON document and imported as a new
prompt (playground/portability.py): the round trip, who may export, and what
an import refuses (each with its code, nothing created)."""

import base64
import copy
import json
import random

import pytest
from rest_framework.test import APIClient

from playground import services
from playground.bodies import body_text
from playground.models import Label, Prompt, PromptVersion, Storage
from playground.portability import FORMAT, history_export
from playground.protection import label_protect
from sharing import services as sharing_services
from tests.factories import PromptFactory, PromptVersionFactory, UserFactory
from tests.sharing.conftest import build_world

IMPORT = "/api/prompts/import"


def _history(owner, *, big: str = "") -> Prompt:
    """v1 root; v2, v3 two branches of v1 (v3 on branch see-you); v4 merges v3 into v2;
    v5 (a big body) edits v4.
    Labels: production (v4, protected), canary (a split v4/v5), dev (v3)."""
    prompt = PromptFactory(owner=owner, title="Support reply")
    v1 = PromptVersionFactory(prompt=prompt, body="Hello {{name}}.\nBye.\n", variables={"name": "World"},
                              system="Be brief.", message="first")
    v2 = PromptVersionFactory(prompt=prompt, parent=v1, body="Hi {{name}}.\nBye.\n",
                              variables={"name": "World"}, system="Be brief.", temperature=0.2)
    v3 = PromptVersionFactory(prompt=prompt, parent=v1, body="Hello {{name}}.\nSee you.\n",
                              variables={"name": None}, stop=["\n\n"], max_tokens=64, top_p=0.9,
                              branch="see-you",
                              response_schema={"type": "object", "properties": {"a": {"type": "string"}}})
    v4 = services.version_create(prompt=prompt, author=owner, parent_id=v2.pk, merge_parent_id=v3.pk,
                                 body="Hi {{name}}.\nSee you.\n", model_name="fixed-cost",
                                 variables={"name": "World"}, message="Merge v3 into v2",
                                 tools=[{"type": "function", "function": {
                                     "name": "lookup", "parameters": {"type": "object", "properties": {}}}}])
    v5 = PromptVersionFactory(prompt=prompt, parent=v4, body=big or "Hi {{name}}!\n",
                              variables={"name": "World"})
    services.label_move(prompt=prompt, name="production", version_id=v4.pk, expected_version_id=None,
                        actor=owner)
    label_protect(prompt=prompt, name="production", protected=True, require_approval=True, actor=owner)
    services.label_split(prompt=prompt, name="canary", expected_version_id=None, actor=owner,
                         variants=[{"version": str(v4.pk), "weight": 70},
                                   {"version": str(v5.pk), "weight": 30}])
    services.label_move(prompt=prompt, name="dev", version_id=v3.pk, expected_version_id=None, actor=owner)
    return prompt


def _client(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def _shape(prompt: Prompt) -> dict:
    """What must survive a round trip, by number instead of id."""
    versions = list(PromptVersion.objects.filter(prompt=prompt).order_by("number"))
    num = {v.pk: v.number for v in versions}
    fields = ("message", "model_name", "temperature", "max_tokens", "top_p", "stop", "system", "variables",
              "response_schema", "tools", "body_sha256", "body_size", "depth")
    return {
        "versions": [{"number": v.number, "parent": num.get(v.parent_id), "merge": num.get(v.merge_parent_id),
                      **{f: getattr(v, f) for f in fields}} for v in versions],
        "labels": [{"name": lb.name, "version": num[lb.version_id], "protected": lb.protected,
                    "require_approval": lb.require_approval,
                    "split": [(num[_pk(s["version"], versions)], s["weight"]) for s in lb.split or []]}
                   for lb in Label.objects.filter(prompt=prompt).order_by("name")],
    }


def _pk(vid, versions):
    return next(v.pk for v in versions if str(v.pk) == str(vid))


@pytest.mark.needs_services  # the big body goes to the S3 server
def test_round_trip_keeps_numbers_parents_merges_hashes_labels_and_stores_big_bodies(db, settings):
    settings.PROMPT_INLINE_MAX_BYTES = 4096
    owner, importer = UserFactory(), UserFactory()
    noise = base64.b64encode(random.Random(7).randbytes(60_000)).decode()  # does not compress: a snapshot
    big = "{{name}}\n" + "\n".join(noise[i:i + 76] for i in range(0, len(noise), 76)) + "\n"
    source = _history(owner, big=big)
    response = _client(owner).get(f"/api/prompts/{source.pk}/history-export")
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="support-reply.promptyard.json"'
    document = json.loads(response.content)
    assert (document["format"], document["format_version"]) == (FORMAT, 1)
    assert [v["author"] for v in document["versions"]] == [owner.username] * 5
    assert document["versions"][3]["merge_parent"] == 3 and document["versions"][4]["body"] == big
    assert [v["branch"] for v in document["versions"]] == ["main", "main", "see-you", "main", "main"]

    answer = _client(importer).post(IMPORT, document, format="json")
    assert answer.status_code == 201, answer.content
    copy_ = Prompt.objects.get(pk=answer.json()["id"])
    assert answer.json()["url"] == f"/prompts/{copy_.pk}/"
    assert (copy_.owner, copy_.title, copy_.version_count) == (importer, "Support reply", 5)
    assert _shape(copy_) == _shape(source)
    assert {v.author_id for v in copy_.versions.all()} == {importer.pk}
    v5 = copy_.versions.get(number=5)
    assert v5.storage == Storage.FULL and v5.payload_blob_id == v5.body_sha256  # in the object store
    assert body_text(v5) == big
    # Exporting the copy gives the same history back (but for who and when).
    again = history_export(copy_)
    strip = [{k: v for k, v in row.items() if k not in ("author", "created_at")} for row in again["versions"]]
    assert strip == [{k: v for k, v in row.items() if k not in ("author", "created_at")}
                     for row in document["versions"]]
    assert again["labels"] == document["labels"]


WHO = [("owner", "active", 200), ("editor", "active", 200), ("viewer", "active", 200),
       ("team_viewer", "active", 200), ("public_in", "active", 200), ("stranger", "active", 404),
       ("anonymous", "active", 404), ("viewer", "revoked", 404), ("editor", "revoked", 404),
       ("public_in", "revoked", 404), ("viewer", "expired", 404)]


@pytest.mark.parametrize(("principal", "state", "want"), WHO)
def test_export_authorization_matrix(db, principal, state, want):
    w = build_world(state)
    response = w.client(principal).get(f"/api/prompts/{w.prompt.pk}/history-export")
    assert response.status_code == want, (principal, state, response.content[:200])
    if want == 200:
        assert [v["number"] for v in response.json()["versions"]] == [1, 2]
    else:
        assert response.json()["error"]["code"] == "prompt_not_found"


def test_import_needs_a_signed_in_user(db):
    w = build_world()
    document = history_export(w.prompt)
    assert APIClient().post(IMPORT, document, format="json").status_code == 401
    assert Prompt.objects.count() == 1


@pytest.fixture
def document(db):
    owner = UserFactory()
    prompt = PromptFactory(owner=owner, title="Small")
    v1 = PromptVersionFactory(prompt=prompt, body="One {{x}}\n", variables={"x": None})
    v2 = PromptVersionFactory(prompt=prompt, parent=v1, body="Two {{x}}\n", variables={"x": None})
    services.label_move(prompt=prompt, name="production", version_id=v2.pk, expected_version_id=None,
                        actor=owner)
    return history_export(prompt)


def _edit(document, path, value):
    doc = copy.deepcopy(document)
    node = doc
    for key in path[:-1]:
        node = node[key]
    if value is _DROP:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return doc


_DROP = object()
BAD = [
    ("tampered body", ("versions", 1, "body"), "Three {{x}}\n", "import_body_hash_mismatch",
     "versions[1].body_sha256"),
    ("format", ("format",), "something-else", "invalid_format", "format"),
    ("format version", ("format_version",), 2, "unsupported_format_version", "format_version"),
    ("missing parent", ("versions", 1, "parent"), 7, "parent_not_found", "versions[1].parent"),
    ("self parent", ("versions", 1, "parent"), 2, "parent_cycle", "versions[1].parent"),
    ("root with parent", ("versions", 0, "parent"), 2, "parent_cycle", "versions[0].parent"),
    ("two roots", ("versions", 1, "parent"), None, "parent_required", "versions[1].parent"),
    ("renumbered", ("versions", 1, "number"), 5, "invalid_value", "versions[1].number"),
    ("temperature type", ("versions", 0, "temperature"), "hot", "invalid_type", "versions[0].temperature"),
    ("boolean number", ("versions", 0, "max_tokens"), True, "invalid_type", "versions[0].max_tokens"),
    ("versions type", ("versions",), {"1": {}}, "invalid_type", "versions"),
    ("missing body", ("versions", 0, "body"), _DROP, "missing_required_parameter", "versions[0].body"),
    ("unknown field", ("versions", 0, "colour"), "red", "unknown_parameter", "versions[0].colour"),
    ("out of range", ("versions", 0, "temperature"), 9.0, "out_of_range", "versions[0].temperature"),
    ("unknown model", ("versions", 1, "model_name"), "nope", "model_not_found", "versions[1].model_name"),
    ("label name", ("labels", 0, "name"), "Not A Label", "invalid_label_name", "labels[0].name"),
    ("label target", ("labels", 0, "version"), 3, "version_not_found", "labels[0].version"),
    ("split weights", ("labels", 0, "split"), [{"version": 2, "weight": 60}, {"version": 1, "weight": 30}],
     "invalid_weights", "labels[0].split"),
    ("split version type", ("labels", 0, "split"),
     [{"version": "2", "weight": 60}, {"version": 1, "weight": 40}],
     "invalid_type", "labels[0].split[0].version"),
    ("title type", ("prompt", "title"), 5, "invalid_type", "prompt.title"),
]


@pytest.mark.parametrize(("case", "path", "value", "code", "field"), BAD, ids=[b[0] for b in BAD])
def test_import_refuses_bad_input_with_a_stable_code(db, document, case, path, value, code, field):
    before = Prompt.objects.count()
    response = _client(UserFactory()).post(IMPORT, _edit(document, path, value), format="json")
    assert response.status_code in (400, 404), (case, response.content)
    error = response.json()["error"]
    assert (error["code"], error["field"]) == (code, field), case
    assert Prompt.objects.count() == before  # nothing half-imported


@pytest.mark.parametrize("what", ["versions", "labels"])
def test_import_refuses_too_many_versions_or_labels(document, settings, what):
    setattr(settings, f"PROMPT_IMPORT_MAX_{what.upper()}", len(document[what]) - 1)
    response = _client(UserFactory()).post(IMPORT, document, format="json")
    assert response.status_code == 400
    assert (response.json()["error"]["code"], response.json()["error"]["field"]) == (
        f"import_too_many_{what}", what)
    assert response.json()["error"][f"max_{what}"] == len(document[what]) - 1


def test_import_refuses_an_oversize_upload(document, settings):
    settings.PROMPT_IMPORT_MAX_BYTES = len(json.dumps(document, separators=(",", ":"))) // 2
    response = _client(UserFactory()).post(IMPORT, document, format="json")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "request_too_large"
    settings.PROMPT_IMPORT_MAX_BYTES = 10 * len(json.dumps(document))
    assert _client(UserFactory()).post(IMPORT, document, format="json").status_code == 201


def test_import_refuses_too_deep_json(document, settings):
    settings.JSON_MAX_DEPTH = 8
    deep: dict = {"type": "object"}
    for _ in range(10):
        deep = {"type": "object", "properties": {"a": deep}}
    doc = _edit(document, ("versions", 0, "response_schema"), deep)
    response = _client(UserFactory()).post(IMPORT, doc, format="json")
    assert (response.status_code, response.json()["error"]["code"]) == (400, "json_too_deep")


def test_import_into_the_same_instance_twice_makes_two_prompts(document):
    client = _client(UserFactory())
    ids = {client.post(IMPORT, document, format="json").json()["id"] for _ in range(2)}
    assert len(ids) == 2
    for pk in ids:
        assert Label.objects.get(prompt_id=pk, name="production").version.number == 2


def test_a_link_pinned_to_one_version_cannot_export_the_history(db):
    w = build_world()
    _, token = sharing_services.link_create(prompt=w.prompt, actor=w.owner, mode="public", version_id=w.v1.pk)
    response = APIClient().get(f"/api/prompts/{w.prompt.pk}/history-export", HTTP_X_SHARE_TOKEN=token)
    assert (response.status_code, response.json()["error"]["code"]) == (403, "forbidden")
