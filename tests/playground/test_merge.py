"""Merging two heads: the three-way merge (a property against its base
cases), the preview's conflicts, the merge commit with two parents in the tree
and the heads, and what is refused (a head with itself, across prompts, one
already containing the other)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from playground import services
from playground.matching import Budget
from playground.merging import merge3 as _merge3
from tests.factories import PromptFactory


def merge3(base, ours, theirs):
    return _merge3(base, ours, theirs, Budget(60))


LINES = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\n", "e\n", "x"]), max_size=8).map("".join)


@pytest.mark.any_profile
@settings(max_examples=100, deadline=None)
@given(base=LINES, ours=LINES, theirs=LINES)
def test_merge3_takes_the_only_change_and_agrees_with_itself(base, ours, theirs):
    assert merge3(base, ours, base)["merged"] == ours
    assert merge3(base, base, theirs)["merged"] == theirs
    assert merge3(base, ours, ours)["merged"] == ours
    both, swapped = merge3(base, ours, theirs), merge3(base, theirs, ours)
    assert both["conflicts"] == swapped["conflicts"]
    if both["conflicts"]:
        conflict = next(h for h in both["hunks"] if h["kind"] == "conflict")
        assert conflict["ours"] != conflict["theirs"]
    else:
        assert both["merged"] == swapped["merged"]


def _v(prompt, body, parent=None, **fields):
    return services.version_create(prompt=prompt, author=prompt.owner, body=body,
                                   parent_id=parent.pk if parent else None, **fields)


@pytest.fixture
def branches(prompt):
    base = _v(prompt, "one\ntwo\nthree\n", system="Be kind.")
    ours = _v(prompt, "ONE\ntwo\nthree\n", base, system="Be kind.", variables={"x": "1"})
    theirs = _v(prompt, "one\ntwo\nTHREE\n", base, system="Be brief.", variables={"y": "2"})
    rival = _v(prompt, "uno\ntwo\nthree\n", base, system="Be kind.")
    return base, ours, theirs, rival


@pytest.mark.django_db
def test_should_merge_two_heads_into_a_child_with_two_parents(auth_client, prompt, branches):
    base, ours, theirs, _ = branches
    api = f"/api/prompts/{prompt.pk}"
    preview = auth_client.post(f"{api}/merge", {"ours": str(ours.pk), "theirs": str(theirs.pk)},
                               format="json").json()
    assert (preview["base"], preview["conflicts"]) == (str(base.pk), 0)
    assert preview["body"]["merged"] == "ONE\ntwo\nTHREE\n" and preview["system"]["merged"] == "Be brief."
    assert preview["variables"] == {"x": "1", "y": "2"}
    made = auth_client.post(f"{api}/versions", {
        "parent": str(ours.pk), "merge_parent": str(theirs.pk), "body": preview["body"]["merged"],
        "system": preview["system"]["merged"], "variables": preview["variables"], "model": "fixed-cost",
        "message": preview["message"]}, format="json")
    assert made.status_code == 201, made.content
    merge = made.json()
    assert (merge["parent"], merge["merge_parent"], merge["depth"]) == (str(ours.pk), str(theirs.pk), 2)
    tree = {n["id"]: n for n in auth_client.get(f"{api}/tree").json()["results"]}
    assert tree[merge["id"]]["merge_parent"] == str(theirs.pk)
    heads = {h["id"] for h in auth_client.get(f"{api}/heads").json()["results"]}
    assert str(theirs.pk) not in heads and str(ours.pk) not in heads and merge["id"] in heads


@pytest.mark.django_db
def test_should_show_conflicts_with_base_ours_and_theirs(auth_client, prompt, branches):
    base, ours, _, rival = branches
    preview = auth_client.post(f"/api/prompts/{prompt.pk}/merge",
                               {"ours": str(ours.pk), "theirs": str(rival.pk)}, format="json").json()
    assert preview["conflicts"] == 1 and preview["body"]["merged"] is None
    conflict = next(h for h in preview["body"]["hunks"] if h["kind"] == "conflict")
    assert conflict == {"kind": "conflict", "base": "one\n", "ours": "ONE\n", "theirs": "uno\n"}


@pytest.mark.django_db
def test_should_refuse_merging_a_head_with_itself_across_prompts_or_into_its_descendant(auth_client, prompt,
                                                                                        branches):
    base, ours, theirs, _ = branches
    elsewhere = _v(PromptFactory(owner=prompt.owner), "x")
    api = f"/api/prompts/{prompt.pk}"

    def preview(a, b):
        return auth_client.post(f"{api}/merge", {"ours": str(a.pk), "theirs": str(b.pk)}, format="json")

    cases = [(preview(ours, ours), 400, "merge_same_version"),
             (preview(ours, elsewhere), 404, "version_not_found"),
             (preview(ours, base), 400, "merge_not_needed"), (preview(base, ours), 400, "merge_not_needed")]
    for response, status, code in cases:
        assert (response.status_code, response.json()["error"]["code"]) == (status, code)
    for merge_parent, code in ((ours, "merge_same_version"), (elsewhere, "version_not_found"),
                               (base, "merge_not_needed")):
        made = auth_client.post(f"{api}/versions", {
            "parent": str(ours.pk), "merge_parent": str(merge_parent.pk), "body": "x", "model": "fixed-cost"},
            format="json")
        assert made.json()["error"]["code"] == code, merge_parent
    assert auth_client.post(f"{api}/merge", {"ours": str(ours.pk)}, format="json").status_code == 400
