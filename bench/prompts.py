"""Prompt library benchmark, run by hand against PostgreSQL and S3:

    source env (DATABASE_URL, S3_*); .venv/bin/python bench/prompts.py [--quick]

It creates a throwaway database (<db>_bench), and prints:
- versions created per second through the API, with p50 / p99 latency;
- reading a version by label (metadata, and metadata + 1 MB body), cold
  (empty body cache) and warm;
- reading the 100th version of a 1 MB chain of small edits (and the chain's
  worst case, the deepest diff) vs. reading a full snapshot: ratio;
- bytes stored for a 200-version chain of a 1 MB prompt vs. every version
  stored whole: ratio (aim under 0.05).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def pct(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(seconds):
    return f"{seconds * 1000:.2f} ms"


def make_body(size: int, rng: random.Random) -> list[str]:
    words = ["prompt", "model", "answer", "context", "user", "system", "token", "reason", "step", "json"]
    lines, total = [], 0
    while total < size:
        line = " ".join(rng.choice(words) for _ in range(10)) + f" #{len(lines)}\n"
        lines.append(line)
        total += len(line)
    return lines


def timed(fn, repeat):
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def bench_api_creates(client, prompt, count):
    latencies, parent = [], None
    for i in range(count):
        payload = {"model": "fixed-cost", "body": f"Summarise {{{{text}}}} in {i} words.\n" * 20,
                   "parent": parent, "message": f"edit {i}"}
        start = time.perf_counter()
        response = client.post(f"/api/prompts/{prompt.pk}/versions", payload, format="json")
        latencies.append(time.perf_counter() - start)
        assert response.status_code == 201, response.content
        parent = response.json()["id"]
    total = sum(latencies)
    print(f"API version create: {count / total:.0f} versions/s, p50 {ms(pct(latencies, 0.5))}, "
          f"p99 {ms(pct(latencies, 0.99))} (sequential, in-process client)")


def bench_chain(client, user, versions, size, repeat):
    from django.conf import settings

    from playground import services
    from playground.bodies import body_cache, body_text
    from playground.models import Blob, PromptVersion, Storage

    rng = random.Random(7)
    prompt = services.prompt_create(owner=user, title="1 MB chain")
    lines = make_body(size, rng)
    chain, parent = [], None
    start = time.perf_counter()
    for i in range(versions):
        at = rng.randrange(len(lines))
        lines[at] = f"small edit {i} " + lines[at]
        parent = services.version_create(prompt=prompt, author=user, parent_id=parent.pk if parent else None,
                                         body="".join(lines), model_name="fixed-cost")
        chain.append(parent)
    build = time.perf_counter() - start
    body_bytes = len("".join(lines).encode())
    print(f"\n{versions}-version chain of a {body_bytes / 1e6:.2f} MB body: built in {build:.1f} s "
          f"({versions / build:.0f} versions/s via services; "
          f"snapshot every {settings.PROMPT_SNAPSHOT_EVERY})")

    def cold_read(version):
        def run():
            body_cache.clear()
            body_text(PromptVersion.objects.select_related("payload_blob").get(pk=version.pk))
        return statistics.median(timed(run, repeat))

    snapshot = next(v for v in reversed(chain) if v.storage == Storage.FULL)
    hundredth = chain[min(99, len(chain) - 1)]
    deepest = max(chain, key=lambda v: v.chain_length)
    t_snap, t_100, t_deep = cold_read(snapshot), cold_read(hundredth), cold_read(deepest)
    print(f"read full snapshot (cold):           {ms(t_snap)}")
    print(f"read version {hundredth.number} (cold, {hundredth.chain_length} diffs): {ms(t_100)}  "
          f"ratio {t_100 / t_snap:.2f}x")
    print(f"read deepest diff (cold, {deepest.chain_length} diffs):   {ms(t_deep)}  "
          f"ratio {t_deep / t_snap:.2f}x")

    stored = 0
    blob_ids = set()
    for v in PromptVersion.objects.filter(prompt=prompt):
        if v.payload_inline is not None:
            stored += len(bytes(v.payload_inline))
        else:
            blob_ids.add(v.payload_blob_id)
    stored += sum(Blob.objects.filter(sha256__in=blob_ids).values_list("size", flat=True))
    whole = sum(v.body_size for v in chain)
    print(f"bytes stored: {stored / 1e6:.2f} MB vs {whole / 1e6:.1f} MB whole: ratio {stored / whole:.4f} "
          f"(aim < 0.05)")
    return prompt, chain


def bench_label_reads(client, prompt, chain, repeat):
    from playground import services
    from playground.bodies import body_cache

    target = max(chain, key=lambda v: v.chain_length)
    services.label_move(prompt=prompt, name="production", version_id=target.pk, expected_version_id=None,
                        actor=prompt.owner)
    meta = f"/api/prompts/{prompt.pk}/labels/production"
    body = f"/api/prompts/{prompt.pk}/versions/{target.pk}/body"

    def read(with_body, cold):
        def run():
            if cold:
                body_cache.clear()
            response = client.get(meta)
            assert response.status_code == 200
            if with_body:
                b"".join(client.get(body).streaming_content)
        return statistics.median(timed(run, repeat))

    print(f"\nread by label (metadata):     cold {ms(read(False, True))}, warm {ms(read(False, False))}")
    cold, warm = read(True, True), read(True, False)
    print(f"read by label + 1 MB body:    cold {ms(cold)}, warm {ms(warm)}, cold/warm {cold / warm:.1f}x "
          f"(version {target.chain_length} diffs from its snapshot)")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer API creates and repeats")
    args = parser.parse_args()

    import django
    from django.conf import settings

    django.setup()
    from django.db import connection

    db = settings.DATABASES["default"]
    if not db["ENGINE"].endswith("postgresql"):
        sys.exit("bench/prompts.py runs against PostgreSQL: set DATABASE_URL (see scripts/test.sh).")
    db.setdefault("TEST", {})["NAME"] = f"{db['NAME']}_bench"
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        from rest_framework.test import APIClient

        from core.blobstore import get_blob_store
        from playground.services import prompt_create
        from tests.factories import UserFactory

        if hasattr(get_blob_store(), "ensure_bucket"):
            get_blob_store().ensure_bucket()
        print(f"store: {get_blob_store().describe()}; database: {connection.settings_dict['NAME']}")
        user = UserFactory()
        client = APIClient()
        client.force_login(user)
        bench_api_creates(client, prompt_create(owner=user, title="api"), 100 if args.quick else 300)
        prompt, chain = bench_chain(client, user, 200, 1_000_000, 3 if args.quick else 7)
        bench_label_reads(client, prompt, chain, 5 if args.quick else 15)
    finally:
        connection.creation.destroy_test_db(db["NAME"].removesuffix("_bench"), verbosity=0)


if __name__ == "__main__":
    main()
