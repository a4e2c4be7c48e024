"""Branch names (playground/branches.py): a version is saved on its parent's
branch unless the save names a new one; names are checked, a taken name is
refused, tips list their branch, and the version list filters by branch."""

import pytest
from rest_framework.test import APIClient

from core.error_codes import DomainError
from playground import services
from playground.ownership import prompt_fork
from tests.factories import PromptFactory, PromptVersionFactory, UserFactory

pytestmark = pytest.mark.django_db


def _client(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def test_versions_inherit_their_parents_branch_and_a_save_may_start_a_new_one():
    root = PromptVersionFactory()
    assert root.branch == "main"
    child = PromptVersionFactory(prompt=root.prompt, parent=root)
    assert child.branch == "main"
    shorter = PromptVersionFactory(prompt=root.prompt, parent=root, branch="shorter/v2")
    assert shorter.branch == "shorter/v2"
    after = PromptVersionFactory(prompt=root.prompt, parent=shorter)
    assert after.branch == "shorter/v2"
    # Naming the branch one is on continues it.
    again = PromptVersionFactory(prompt=root.prompt, parent=after, branch="shorter/v2")
    assert again.branch == "shorter/v2"


@pytest.mark.parametrize(("name", "code"), [("Main!", "invalid_branch_name"), ("-x", "invalid_branch_name"),
                                            ("a" * 64, "invalid_branch_name"), ("taken", "branch_exists")])
def test_a_bad_or_taken_branch_name_is_refused_and_nothing_is_saved(name, code):
    root = PromptVersionFactory()
    PromptVersionFactory(prompt=root.prompt, parent=root, branch="taken")
    before = root.prompt.versions.count()
    with pytest.raises(DomainError) as refused:
        PromptVersionFactory(prompt=root.prompt, parent=root, branch=name)
    assert (refused.value.code, refused.value.field) == (code, "branch")
    assert root.prompt.versions.count() == before


def test_the_api_takes_a_branch_lists_it_on_tips_and_filters_versions_by_it():
    owner = UserFactory()
    prompt = PromptFactory(owner=owner)
    root = PromptVersionFactory(prompt=prompt)
    api = _client(owner)
    made = api.post(f"/api/prompts/{prompt.pk}/versions",
                    {"parent": str(root.pk), "body": "Shorter {{name}}.", "branch": "terse"}, format="json")
    assert made.status_code == 201, made.content
    assert made.json()["branch"] == "terse"
    PromptVersionFactory(prompt=prompt, parent=root)  # main goes on
    heads = api.get(f"/api/prompts/{prompt.pk}/heads").json()["results"]
    assert sorted((h["branch"], h["number"]) for h in heads) == [("main", 3), ("terse", 2)]
    listed = api.get(f"/api/prompts/{prompt.pk}/versions?branch=terse").json()["results"]
    assert [v["number"] for v in listed] == [2]
    malformed = api.get(f"/api/prompts/{prompt.pk}/versions", {"branch": "Not a branch\x00"})
    assert malformed.status_code == 400 and malformed.json()["error"]["code"] == "invalid_branch_name"
    taken = api.post(f"/api/prompts/{prompt.pk}/versions",
                     {"parent": str(root.pk), "body": "Other {{name}}.", "branch": "terse"}, format="json")
    assert taken.status_code == 409 and taken.json()["error"]["code"] == "branch_exists"
    nodes = api.get(f"/api/prompts/{prompt.pk}/tree").json()["results"]
    assert {n["number"]: n["branch"] for n in nodes} == {1: "main", 2: "terse", 3: "main"}


def test_a_fork_copies_every_field_a_run_uses():
    owner = UserFactory()
    source = PromptVersionFactory(
        prompt=PromptFactory(owner=owner), seed=7, messages=[{"role": "assistant", "content": "Hi."}],
        tools=[{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}],
        tool_choice="required")
    fork = prompt_fork(source=source.prompt, version_id=source.pk, owner=UserFactory())
    copied = fork.versions.get()
    assert (copied.seed, copied.messages, copied.tools, copied.tool_choice, copied.branch) == (
        7, source.messages, source.tools, "required", "main")


def test_a_merge_stays_on_its_first_parents_branch():
    root = PromptVersionFactory()
    main = PromptVersionFactory(prompt=root.prompt, parent=root, body="A {{name}}.")
    side = PromptVersionFactory(prompt=root.prompt, parent=root, body="B {{name}}.", branch="side")
    merged = services.version_create(prompt=root.prompt, author=root.prompt.owner, parent_id=main.pk,
                                     merge_parent_id=side.pk, body="AB {{name}}.", model_name="fixed-cost")
    assert merged.branch == "main"
