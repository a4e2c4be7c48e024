import json

import pytest

from playground.models import Blob, Label, LabelMove, PromptVersion
from tests.factories import PromptFactory, PromptVersionFactory
from tests.playground.conftest import create_version

pytestmark = pytest.mark.django_db


def _counts():
    return (PromptVersion.objects.count(), Label.objects.count(), LabelMove.objects.count(),
            Blob.objects.count())


@pytest.fixture
def root(prompt):
    return PromptVersionFactory(prompt=prompt, body="root\n")


@pytest.mark.parametrize(("fields", "field", "code"), [
    ({"temperature": 2.5}, "temperature", "out_of_range"),
    ({"temperature": -0.1}, "temperature", "out_of_range"),
    ({"top_p": 0}, "top_p", "out_of_range"),
    ({"max_tokens": 0}, "max_tokens", "out_of_range"),
    ({"stop": ["a", "b", "c", "d", "e"]}, "stop", "invalid_request"),
    ({"variables": {"1bad": None}}, "variables", "invalid_variable_name"),
    ({"response_schema": [1, 2]}, "response_schema", "invalid_request"),
    ({"temperature": "warm"}, "temperature", "invalid_request"),
])
def test_invalid_parameters_are_400_naming_the_field(auth_client, prompt, root, fields, field, code):
    before = _counts()
    response = create_version(auth_client, prompt, parent=str(root.pk), body="x\n", **fields)
    assert response.status_code == 400, response.json()
    assert response.json()["error"]["field"] == field
    assert response.json()["error"]["code"] == code
    assert _counts() == before


def test_an_unknown_model_is_a_404_model_not_found_as_on_v1(auth_client, prompt, root):
    before = _counts()
    response = create_version(auth_client, prompt, parent=str(root.pk), body="x\n", model="gpt-nonexistent")
    error = response.json()["error"]
    assert (response.status_code, error["code"], error["field"]) == (404, "model_not_found", "model")
    assert _counts() == before


def test_non_utf8_body_is_400_on_body(auth_client, prompt, root):
    before = _counts()
    # A lone surrogate is valid JSON but cannot be encoded as UTF-8.
    raw = json.dumps({"parent": str(root.pk), "model": "fixed-cost", "body": "bad \ud800 text"})
    response = auth_client.post(f"/api/prompts/{prompt.pk}/versions", raw, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "body"
    # The service checks too, for callers that bypass the serializer.
    from core.error_codes import DomainError
    from playground import services

    with pytest.raises(DomainError) as raised:
        services.version_create(prompt=prompt, author=prompt.owner, parent_id=root.pk, body="bad \ud800")
    assert (raised.value.field, raised.value.code) == ("body", "body_not_utf8")
    assert _counts() == before


def test_body_over_the_maximum_is_400_on_body(settings, auth_client, prompt, root):
    settings.PROMPT_BODY_MAX_BYTES = 1000
    before = _counts()
    response = create_version(auth_client, prompt, parent=str(root.pk), body="é" * 501)  # 1002 bytes
    assert response.status_code == 400
    assert (response.json()["error"]["field"], response.json()["error"]["code"]) == ("body", "body_too_large")
    assert _counts() == before


def test_parent_from_another_prompt_is_400_on_parent(auth_client, prompt, root, user):
    foreign = PromptVersionFactory(prompt=PromptFactory(owner=user), body="elsewhere\n")
    before = _counts()
    response = create_version(auth_client, prompt, parent=str(foreign.pk), body="x\n")
    assert response.status_code == 400
    assert (response.json()["error"]["field"], response.json()["error"]["code"]) == ("parent",
                                                                                    "parent_not_found")
    assert _counts() == before


def test_cycle_attempt_and_missing_parent_are_400_on_parent(auth_client, prompt, root):
    import uuid

    own_id = str(uuid.uuid4())
    before = _counts()
    cycle = create_version(auth_client, prompt, id=own_id, parent=own_id, body="x\n")
    assert cycle.status_code == 400 and cycle.json()["error"]["code"] == "parent_cycle"
    orphan = create_version(auth_client, prompt, body="x\n")  # no parent once versions exist
    assert orphan.status_code == 400 and orphan.json()["error"]["field"] == "parent"
    reused = create_version(auth_client, prompt, id=str(root.pk), parent=str(root.pk), body="x\n")
    assert reused.status_code == 400 and reused.json()["error"]["field"] == "parent"
    assert _counts() == before


@pytest.mark.parametrize("body", ["", "   ", "\n\t \r\n"])
def test_empty_or_whitespace_body_is_400_on_body(auth_client, prompt, root, body):
    before = _counts()
    response = create_version(auth_client, prompt, parent=str(root.pk), body=body)
    assert response.status_code == 400, response.json()
    assert (response.json()["error"]["field"], response.json()["error"]["code"]) == ("body", "empty_body")
    assert _counts() == before


def test_a_version_identical_to_its_parent_is_refused_and_any_change_is_not(auth_client, prompt, root):
    same = {"parent": str(root.pk), "body": "root\n", "model": root.model_name}
    before = _counts()
    response = create_version(auth_client, prompt, **same)
    assert response.status_code == 409, response.json()
    assert response.json()["error"]["code"] == "version_unchanged"
    assert f"version {root.number}" in response.json()["error"]["message"]
    assert _counts() == before
    for change in ({"temperature": 0.3}, {"system": "Be brief."}, {"body": "root\nmore\n"},
                   {"max_tokens": 17}):
        assert create_version(auth_client, prompt, **{**same, **change}).status_code == 201, change


def test_missing_body_is_400(auth_client, prompt, root):
    response = create_version(auth_client, prompt, parent=str(root.pk))
    assert response.status_code == 400 and response.json()["error"]["field"] == "body"


def test_forged_upload_handle_never_touches_a_content_addressed_object(auth_client, user, prompt):
    """A handle signed with a leaked key naming someone's `sha256/<hex>` object is refused,
    and the object survives (it used to be deleted, even on a size mismatch)."""
    import hashlib

    from django.core import signing

    from core.blobstore import get_blob_store
    from playground.uploads import _SALT

    victim = b"someone else's large body\n" * 10
    key = f"sha256/{hashlib.sha256(victim).hexdigest()}"
    store = get_blob_store()
    store.put(key, victim)
    try:
        forged = signing.dumps({"k": key, "s": len(victim) + 1, "u": user.pk,
                                "p": str(prompt.pk)}, salt=_SALT)
        response = create_version(auth_client, prompt, body_upload={
            "upload": forged, "sha256": hashlib.sha256(victim).hexdigest()})
        assert response.status_code == 400, response.json()
        assert response.json()["error"]["code"] == "upload_invalid"
        assert store.get(key) == victim
    finally:
        store.delete(key)
