"""The page bench's data (bench/playground_page.py): a prompt of 1,000 versions and
10,000 history runs, and a baseline prompt of one of each. Django is set up by the caller."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection

from playground import services
from playground.models import PlaygroundRun, Prompt, PromptVersion

USER, PASSWORD = "pagebench", "a-long-bench-password-42"
BIG, SMALL = "Page bench: 1,000 versions", "Page bench: baseline"
VERSIONS, RUNS = 1000, 10_000
BODY = "Summarise {{text}} for a busy reader.\n" + "".join(f"Rule {i}: keep it short.\n" for i in range(40))
LONG = "".join(f"word{i} " for i in range(60))[:300]  # ~300 characters: a 300-token answer per column


def output(i: int) -> str:  # a run's answer: about 1.6 KB, every tenth about 22 KB
    return f"Answer {i}:\n" + "lorem ipsum dolor sit amet " * (800 if i % 10 == 0 else 60)


def seed_prompt(user, title: str, versions: int, runs: int, model: str) -> Prompt:
    prompt = services.prompt_create(owner=user, title=title, description="bench")
    parent = None
    for n in range(versions):  # a chain of edits: each version one line more than its parent
        body = BODY + "".join(f"Edit {i}.\n" for i in range(n))
        parent = services.version_create(
            prompt=prompt, author=user, parent_id=parent and parent.pk, body=body, system="You are terse.",
            variables={"text": None}, max_tokens=len(LONG), message=f"edit {n}")
    ids = list(PromptVersion.objects.filter(prompt=prompt).values_list("pk", flat=True))
    PlaygroundRun.objects.bulk_create([PlaygroundRun(
        prompt=prompt, user=user, version_id=ids[i % len(ids)], draft=None if i % 5 else {"body": "draft"},
        variables={"text": f"input {i}"}, params={"model": model}, model=model, status="ok",
        output=output(i), output_size=len(output(i)), prompt_tokens=60, completion_tokens=len(output(i)) // 4,
        latency_ms=900 + i % 300, ttft_ms=50 + i % 40, search_text=f"input {i}") for i in range(runs)],
        batch_size=2000)
    with connection.cursor() as cur:  # a run every 37 s back in time, as a history has
        cur.execute(f"""UPDATE {PlaygroundRun._meta.db_table} r SET created_at = now() - s.n * interval '37 s'
                        FROM (SELECT id, row_number() OVER (ORDER BY id) n FROM {PlaygroundRun._meta.db_table}
                              WHERE prompt_id = %s) s WHERE r.id = s.id""", [prompt.pk])
    return prompt


def seed(reseed: bool, *, model: str, database: str) -> tuple[str, str]:
    """The two prompts' ids (big, baseline), seeded once and kept between runs (reseed: start over)."""
    call_command("migrate", verbosity=0)
    user_model = get_user_model()
    user = user_model.objects.filter(username=USER).first()
    if user is None:
        user = user_model.objects.create_user(USER, password=PASSWORD)
    prompts = {p.title: p for p in Prompt.objects.filter(owner=user)}
    if reseed or len(prompts) != 2 or PlaygroundRun.objects.filter(prompt=prompts.get(BIG)).count() < RUNS:
        Prompt.objects.filter(owner=user).delete()
        print(f"seeding {VERSIONS} versions and {RUNS} runs (once; kept in {database})...", flush=True)
        prompts = {BIG: seed_prompt(user, BIG, VERSIONS, RUNS, model),
                   SMALL: seed_prompt(user, SMALL, 1, 1, model)}
    # Runs of earlier bench runs go: every run starts from the same history.
    PlaygroundRun.objects.filter(prompt__owner=user).exclude(search_text__startswith="input ").delete()
    return str(prompts[BIG].pk), str(prompts[SMALL].pk)
