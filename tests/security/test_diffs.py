"""H2: every diff-like computation is linear or under a deadline (playground.matching).

difflib.SequenceMatcher is quadratic on repeating lines: storing a child of a
4 MB body of 101 repeating lines as a delta took 20 s, a 40k-line merge
preview 7 s; the eval word diff and the similarity evaluator ran it on
whatever outputs a run produced. Under their deadlines (0.5 s by default) these
computations end in bounded time whatever the input (the out-of-time tests: a full
snapshot, a coarse merge, nothing lost). The two large cases run with a deadline they
never near, so that their fine result does not depend on the machine's load, under a
freeze bound the quadratic matcher missed by far (20 s and 7 s)."""

import random
import time

import pytest

from evals import evaluators as ev
from evals.run_job import evalrun_drive
from playground import services
from playground.bodies import body_cache, body_text
from playground.models import PromptVersion, Storage
from tests.evals.conftest import MODEL, _eval_settings, backend  # noqa: F401 (fixtures)
from tests.factories import PromptFactory, PromptVersionFactory

pytestmark = pytest.mark.django_db
BLOCK = [f"Line {i} of a block that repeats, {'padded ' * (i % 7)}to vary its length.\n" for i in range(101)]


def _repeating(total_bytes: int) -> list[str]:
    lines, size = [], 0
    while size < total_bytes:
        line = BLOCK[len(lines) % len(BLOCK)]
        lines.append(line)
        size += len(line)
    return lines


def _timed(call):
    started = time.monotonic()
    result = call()
    return result, time.monotonic() - started


def test_a_child_of_a_4mb_body_of_repeating_lines_is_stored_as_a_delta_and_diffed(auth_client, user,
                                                                                  settings):
    settings.PROMPT_DELTA_TIMEOUT_S = settings.PROMPT_DIFF_TIMEOUT_S = 60
    prompt = PromptFactory(owner=user)
    api = f"/api/prompts/{prompt.pk}"
    lines = _repeating(4 * 1024 * 1024)
    parent = auth_client.post(f"{api}/versions", {"body": "".join(lines), "model": "fixed-cost"},
                              format="json")
    assert parent.status_code == 201, parent.content
    for at in (3, len(lines) // 3, len(lines) // 2, len(lines) - 4):
        lines[at] = f"An edit at line {at}.\n"
    child_body = "".join(lines)
    child, created_s = _timed(lambda: auth_client.post(f"{api}/versions", {
        "body": child_body, "model": "fixed-cost", "parent": parent.json()["id"]}, format="json"))
    assert child.status_code == 201, child.content
    diff, diffed_s = _timed(lambda: b"".join(auth_client.get(
        f"{api}/diff?from={parent.json()['id']}&to={child.json()['id']}").streaming_content).decode())
    fields, fields_s = _timed(lambda: auth_client.get(
        f"{api}/diff/fields?from={parent.json()['id']}&to={child.json()['id']}").json())
    assert created_s < 10 and diffed_s < 10 and fields_s < 10, (created_s, diffed_s, fields_s)
    assert diff.count("+An edit at line") == 4 and "Coarse" not in diff
    (body,) = fields["messages"]
    assert body["diff"].count("+An edit at line") == 4 and not fields["coarse"]
    stored = PromptVersion.objects.get(pk=child.json()["id"])
    assert stored.storage == Storage.DELTA  # the small diff was found
    body_cache.clear()
    assert body_text(stored) == child_body  # rebuilt from the parent and the delta, byte for byte


def test_a_delta_that_would_take_too_long_is_stored_as_a_full_snapshot(settings, user):
    settings.PROMPT_DELTA_TIMEOUT_S = 0
    prompt = PromptFactory(owner=user)
    parent = services.version_create(prompt=prompt, author=user, body="".join(_repeating(20_000)))
    body = "".join(line.upper() if i % 3 else line for i, line in enumerate(_repeating(20_000)))
    child = services.version_create(prompt=prompt, author=user, body=body, parent_id=parent.pk)
    assert child.storage == Storage.FULL and child.chain_length == 0
    body_cache.clear()
    assert body_text(PromptVersion.objects.get(pk=child.pk)) == body


def _branch(lines: list[str], edits: dict[int, str]) -> str:
    out = list(lines)
    for at, text in edits.items():
        out[at] = text
    return "".join(out)


def test_a_40k_line_three_way_merge_preview_merges_cleanly(auth_client, user, settings):
    settings.PROMPT_DIFF_TIMEOUT_S = 60
    prompt = PromptFactory(owner=user)
    lines = [BLOCK[i % len(BLOCK)] for i in range(40_000)]
    ours_edits = {10: "ours at 10\n", 20_000: "ours at 20000\n"}
    theirs_edits = {15_000: "theirs at 15000\n", 39_990: "theirs at 39990\n"}
    base = services.version_create(prompt=prompt, author=user, body="".join(lines))
    ours = services.version_create(prompt=prompt, author=user, body=_branch(lines, ours_edits),
                                   parent_id=base.pk)
    theirs = services.version_create(prompt=prompt, author=user, body=_branch(lines, theirs_edits),
                                     parent_id=base.pk)
    body_cache.clear()
    preview, preview_s = _timed(lambda: auth_client.post(f"/api/prompts/{prompt.pk}/merge", {
        "ours": str(ours.pk), "theirs": str(theirs.pk)}, format="json"))
    assert preview.status_code == 200, preview.content
    assert preview_s < 5, preview_s
    body = preview.json()
    assert (body["conflicts"], body["coarse"]) == (0, False)
    assert body["body"]["merged"] == _branch(lines, {**ours_edits, **theirs_edits})


def test_a_merge_preview_out_of_time_is_coarse_but_loses_no_change(auth_client, user, settings):
    settings.PROMPT_DIFF_TIMEOUT_S = 0
    prompt = PromptFactory(owner=user)
    lines = [BLOCK[i % len(BLOCK)] for i in range(2000)]
    base = services.version_create(prompt=prompt, author=user, body="".join(lines))
    ours = services.version_create(prompt=prompt, author=user, body=_branch(lines, {5: "ours\n"}),
                                   parent_id=base.pk)
    theirs = services.version_create(prompt=prompt, author=user, body=_branch(lines, {1500: "theirs\n"}),
                                     parent_id=base.pk)
    pair = {"ours": str(ours.pk), "theirs": str(theirs.pk)}
    body = auth_client.post(f"/api/prompts/{prompt.pk}/merge", pair, format="json").json()
    assert body["coarse"] is True and body["conflicts"] == 1  # one whole-body conflict, not a wrong merge
    [conflict] = [h for h in body["body"]["hunks"] if h["kind"] == "conflict"]
    assert (conflict["ours"], conflict["theirs"]) == (body_text(ours), body_text(theirs))


def _words(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(["a", "b"]) for _ in range(n))


@pytest.mark.usefixtures("backend")
@pytest.mark.timeout(120)  # SequenceMatcher needed minutes for this page; the page's budget is 0.5 s
def test_the_word_diffs_of_a_page_of_large_eval_outputs_are_bounded_and_correct(user, settings):
    from rest_framework.test import APIClient

    settings.EVAL_DIFF_TIMEOUT_S = 0.5
    # 80 cells of ~4000 tokens each: room for them in the owner's minute, so the run does not wait.
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "free": {"requests_per_min": 10_000,
                                                              "tokens_per_min": 10_000_000}}
    prompt = PromptFactory(owner=user)
    both = {"q": None, "p": None}  # each row gives both; the engine answers the one in the body reversed
    first = PromptVersionFactory(prompt=prompt, body="{{q}}", variables=both, model_name=MODEL,
                                 max_tokens=2000)
    second = PromptVersionFactory(prompt=prompt, parent=first, body="{{p}}", variables=both,
                                  model_name=MODEL, max_tokens=2000)
    client = APIClient()
    client.force_login(user)
    rows = [{"variables": {"q": _words(900, i), "p": _words(900, 1000 + i)}} for i in range(40)]
    dataset = client.post("/api/datasets/", {"name": "alternating", "rows": rows}, format="json").json()
    run = client.post("/api/evals/runs", {"dataset": dataset["id"], "evaluators": ["exact"], "columns": [
        {"prompt": str(prompt.pk), "version": str(v.pk)} for v in (first, second)]}, format="json").json()
    evalrun_drive(run["id"])
    page = client.get(f"/api/evals/runs/{run['id']}/results?limit=40").json()
    assert len(page["rows"]) == 40
    for row in page["rows"]:
        one, two = row["cells"]
        assert len(one["output"]) > 1500 and not one["error"] and not two["error"], row
        diff = two["diff"]
        assert "".join(t for op, t in diff if op != "+") == one["output"][:4000]
        assert "".join(t for op, t in diff if op != "-") == two["output"][:4000]
    settings.EVAL_DIFF_TIMEOUT_S = 0  # no time to match: each diff is one whole change, at once
    page = client.get(f"/api/evals/runs/{run['id']}/results?limit=40").json()
    for row in page["rows"]:
        one, two = row["cells"]
        assert two["diff"] == [["-", one["output"][:4000]], ["+", two["output"][:4000]]]


@pytest.mark.timeout(120)  # difflib's ratio of two 1 MB texts takes hours; the budget is 0.5 s
def test_the_similarity_of_two_1mb_texts_is_bounded_and_says_when_it_is_a_lower_bound():
    spec = ev.check_evaluators(["similarity"])
    output, expected = _words(500_000, 1), _words(500_000, 2)
    score = ev.score_output(spec, output=output, expected=expected, variables={})["similarity"]
    assert 0 <= score["score"] <= 1 and score["passed"] is False
    assert "a lower bound" in score["reason"]
    same = ev.score_output(spec, output=output, expected=output, variables={})["similarity"]
    assert same == {"score": 1.0, "passed": True, "reason": ""}
    near = ev.score_output(spec, output="kitten", expected="sitting", variables={})["similarity"]
    assert near["score"] == pytest.approx(8 / 13)  # "ittn" in common: 2 * 4 / (6 + 7)
