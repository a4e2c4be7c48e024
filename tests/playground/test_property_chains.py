"""Random edit chains and branches: every version reads back byte-for-byte,
whichever way it was stored (inline or store, snapshot or diff)."""

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from playground import services
from playground.bodies import body_cache, body_text
from playground.models import PromptVersion, Storage
from tests.factories import PromptFactory

LINES = st.sampled_from(["alpha\n", "beta\n", "gamma\r\n", "δέλτα\n", "\n", "{{x}}\n", "tail", "  \t\n"])
BODY = st.lists(LINES, max_size=30).map("".join)


@st.composite
def edit(draw, body: str):
    lines = body.split("\n")
    kind = draw(st.sampled_from(["insert", "delete", "replace", "rewrite"]))
    if kind == "rewrite":
        return draw(BODY)
    at = draw(st.integers(0, len(lines)))
    if kind == "delete" and lines:
        del lines[min(at, len(lines) - 1)]
    else:
        text = draw(st.text(alphabet="abz é\r\t{}", max_size=12))
        if kind == "replace" and lines:
            lines[min(at, len(lines) - 1)] = text
        else:
            lines.insert(at, text)
    return "\n".join(lines)


@pytest.mark.django_db
@hsettings(max_examples=25, deadline=None,
           suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data(), root_body=BODY.filter(str.strip))
def test_every_version_of_random_chains_and_branches_reads_back_exactly(small_storage, user, data, root_body):
    prompt = PromptFactory(owner=user)  # one user: password hashing is slow
    versions = [services.version_create(prompt=prompt, author=prompt.owner, body=root_body,
                                        model_name="fixed-cost")]
    expected = {versions[0].pk: root_body}
    for _ in range(data.draw(st.integers(1, 12), label="edits")):
        # Mostly extend the newest version (long chains), sometimes branch off an older one.
        parent = data.draw(st.sampled_from(versions[-1:] * 3 + versions), label="parent")
        body = data.draw(edit(expected[parent.pk]), label="body")
        if not body.strip() or body == expected[parent.pk]:
            continue  # refused (empty_body, version_unchanged): tests/playground/test_bad_input.py
        child = services.version_create(prompt=prompt, author=prompt.owner, parent_id=parent.pk, body=body,
                                        model_name="fixed-cost")
        versions.append(child)
        expected[child.pk] = body
    body_cache.clear()
    for version in PromptVersion.objects.filter(prompt=prompt):
        assert version.chain_length < small_storage.PROMPT_SNAPSHOT_EVERY
        assert (version.storage == Storage.DELTA) == (version.chain_length > 0)
        assert body_text(version).encode() == expected[version.pk].encode()
