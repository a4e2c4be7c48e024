import pytest

from tests.factories import PromptVersionFactory

pytestmark = pytest.mark.django_db


def _render(client, version, variables):
    return client.post(f"/api/prompts/{version.prompt_id}/versions/{version.pk}/render",
                       {"variables": variables}, format="json")


def test_render_substitutes_values_and_defaults_without_evaluating(auth_client, prompt):
    version = PromptVersionFactory(prompt=prompt, body="Dear {{ name }}, re: {{topic}}.\n",
                                   system="You are {{persona}}.", variables={"persona": "helpful"})
    out = _render(auth_client, version, {"name": "{{persona}} __import__('os')", "topic": 42}).json()
    assert out["body"] == "Dear {{persona}} __import__('os'), re: 42.\n"
    assert out["system"] == "You are helpful."
    assert out["messages"] == [{"role": "system", "content": "You are helpful."},
                               {"role": "user", "content": out["body"]}]


def test_render_names_every_missing_variable_in_one_400(auth_client, prompt):
    version = PromptVersionFactory(prompt=prompt, body="{{a}} {{b}} {{a}} {{c}}", variables={"c": "x"})
    response = _render(auth_client, version, {})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "missing_variables" and error["missing"] == ["a", "b"]
    assert error["field"] == "variables" and "a, b" in error["message"]


def test_render_rejects_unknown_variables(auth_client, prompt):
    version = PromptVersionFactory(prompt=prompt, body="Hi {{name}}")
    response = _render(auth_client, version, {"name": "x", "nmae": "typo", "extra": "y"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "unknown_variables"
    assert response.json()["error"]["unknown"] == ["extra", "nmae"]
    bad_value = _render(auth_client, version, {"name": {"nested": 1}})
    assert bad_value.status_code == 400 and bad_value.json()["error"]["field"] == "variables"


def _diff(client, a, b, mode):
    response = client.get(f"/api/prompts/{a.prompt_id}/diff?from={a.pk}&to={b.pk}&mode={mode}")
    assert response.status_code == 200
    return b"".join(response.streaming_content).decode()


def test_line_and_word_diff_of_multi_megabyte_bodies(auth_client, prompt, settings):
    # The exact diff, however slow the machine: the budget's own cut-off has its test.
    settings.PROMPT_DIFF_TIMEOUT_S = 60
    lines = [f"Sentence number {i} says something about prompts.\n" for i in range(60000)]  # ~3 MB
    old = PromptVersionFactory(prompt=prompt, body="".join(lines))
    lines[30000] = "Sentence number 30000 says something new about prompts.\n"
    lines.insert(50000, "An inserted line.\n")
    new = PromptVersionFactory(prompt=prompt, parent=old, body="".join(lines))
    line = _diff(auth_client, old, new, "line")
    assert line.startswith(f"--- v{old.number}\n+++ v{new.number}\n")
    assert "-Sentence number 30000 says something about prompts.\n" in line
    assert "+Sentence number 30000 says something new about prompts.\n" in line
    assert "@@ -29998,7 +29998,7 @@" in line and "+An inserted line.\n" in line
    assert len(line) < 2000
    word = _diff(auth_client, old, new, "word")
    assert "says something {+new +}about prompts." in word
    assert "{+An inserted line.\n+}" in word


def _apply(old: str, diff: str) -> str:
    """Applies a unified line diff (ours) to `old`."""
    import re

    src, out, pos = old.splitlines(keepends=True), [], 0
    for line in diff.splitlines(keepends=True)[2:]:
        if line.startswith("@@"):
            start = int(re.match(r"@@ -(\d+)", line).group(1)) - 1  # our header: first old line, 1-based
            out += src[pos:start]
            pos = start
        elif line.startswith((" ", "-")):
            pos += 1
            if line[0] == " ":
                out.append(line[1:])
        elif line.startswith("+"):
            out.append(line[1:])
        else:  # the coarse note
            assert line.startswith("\\ Coarse"), line
    return "".join(out + src[pos:])


@pytest.mark.parametrize(("lines", "budget_s"), [(300, 30.0), (8000, 0.0)])
def test_should_diff_alternating_lines_within_the_time_budget_and_say_when_coarse(auth_client, prompt,
                                                                                  settings, lines, budget_s):
    """SequenceMatcher took seconds on this (quadratic); out of budget, the diff is coarser but correct."""
    settings.PROMPT_DIFF_TIMEOUT_S = budget_s
    old_body = "".join("a\n" if i % 2 else f"b{i % 7}\n" for i in range(lines))
    new_body = "".join("a\n" if i % 3 else f"b{i % 5}\n" for i in range(lines))
    old = PromptVersionFactory(prompt=prompt, body=old_body)
    new = PromptVersionFactory(prompt=prompt, parent=old, body=new_body)
    response = auth_client.get(f"/api/prompts/{prompt.pk}/diff?from={old.pk}&to={new.pk}")
    text = b"".join(response.streaming_content).decode()
    assert response["X-Diff-Coarse"] == ("true" if budget_s == 0 else "false")
    assert text.endswith("PROMPT_DIFF_TIMEOUT_S).\n") == (budget_s == 0)
    assert _apply(old_body, text) == new_body


def test_diff_needs_two_versions_of_the_same_prompt(auth_client, prompt):
    from tests.factories import PromptFactory

    a = PromptVersionFactory(prompt=prompt)
    b = PromptVersionFactory(prompt=PromptFactory(owner=prompt.owner))
    response = auth_client.get(f"/api/prompts/{prompt.pk}/diff?from={a.pk}&to={b.pk}")
    assert response.status_code == 404 and response.json()["error"]["code"] == "version_not_found"
    assert auth_client.get(f"/api/prompts/{prompt.pk}/diff?from={a.pk}").status_code == 400


def test_a_lone_surrogate_in_a_run_variable_is_400_naming_the_variable(auth_client, prompt):
    version = PromptVersionFactory(prompt=prompt, body="Hi {{name}}")
    response = auth_client.post(f"/api/prompts/{prompt.pk}/versions/{version.pk}/render",
                                '{"variables": {"name": "bad \\ud800"}}', content_type="application/json")
    assert response.status_code == 400
    assert (response.json()["error"]["field"], response.json()["error"]["code"]) == (
        "variables.name", "invalid_unicode")


def test_the_render_preview_shows_the_messages_a_run_sends(auth_client, prompt):
    """The system message is there whenever the saved system text is, even when
    it renders empty: the same rule as the run (playground.calls.builder)."""
    from playground.calls.builder import version_chat_body

    version = PromptVersionFactory(prompt=prompt, body="Hi {{name}}", system="{{persona}}")
    variables = {"name": "Ada", "persona": ""}
    preview = _render(auth_client, version, variables).json()
    assert preview["messages"] == version_chat_body(version=version, variables=variables)["messages"]
    assert preview["messages"][0] == {"role": "system", "content": ""}


@pytest.mark.django_db(transaction=True)  # the view runs on another thread than this async test
async def test_should_stream_bodies_and_diffs_chunk_by_chunk_under_asgi(settings):
    """Under ASGI a sync iterator is collected whole into a list first (Django warns so):
    bodies and diffs are async iterators there."""
    import warnings

    from asgiref.sync import sync_to_async
    from django.test import AsyncClient

    from tests.factories import PromptFactory, UserFactory

    settings.PROMPT_INLINE_MAX_BYTES = 64  # the body streams from the store
    user = await sync_to_async(UserFactory)()
    prompt = await sync_to_async(PromptFactory)(owner=user)
    body = "".join(f"line {i}\n" for i in range(20000))
    old = await sync_to_async(PromptVersionFactory)(prompt=prompt, body=body)
    new = await sync_to_async(PromptVersionFactory)(prompt=prompt, parent=old, body=body + "one more\n")
    client = AsyncClient()
    await client.aforce_login(user)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*must consume synchronous iterators.*")
        response = await client.get(f"/api/prompts/{prompt.pk}/versions/{old.pk}/body")
        assert b"".join([chunk async for chunk in response]).decode() == body
        diff = await client.get(f"/api/prompts/{prompt.pk}/diff?from={old.pk}&to={new.pk}")
        assert "+one more\n" in b"".join([chunk async for chunk in diff]).decode()
    from django.db import connections

    await sync_to_async(connections.close_all)()  # the views' thread's connection, before teardown
