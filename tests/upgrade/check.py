"""Run in a process whose database was upgraded from a snapshot (test_upgrade.py):
reads every snapshot row through today's models, writes new ones, tries to change
an immutable row on PostgreSQL, and prints what it found as one JSON line."""

import json

import django
from django.db import DatabaseError, connection, transaction


def _refused(table: str, column: str) -> bool:
    """True when the database itself refuses an UPDATE of the table's rows (raw SQL:
    the ORM refuses before it gets there)."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"UPDATE {table} SET {column} = %s", ["changed"])
    except DatabaseError:
        return True
    return False


def main() -> None:
    django.setup()
    from django.contrib.auth import get_user_model
    from django.contrib.contenttypes.models import ContentType

    from evals import datasets
    from evals.models import Dataset, DatasetRow, EvalColumn, EvalResult, EvalRun
    from playground import services
    from playground.bodies import body_text
    from playground.models import Label, Prompt
    from sharing.models import Grant, ShareLink
    from webhooks.models import WebhookDelivery, WebhookEndpoint

    owner = get_user_model().objects.get(username="snap-owner")
    prompt = Prompt.objects.get(title="Snapshot prompt")
    dataset = Dataset.objects.get(name="Snapshot dataset")
    run = EvalRun.objects.get(name="snapshot run")
    found = {
        "prompt_owner": prompt.owner.username,
        "version_body": body_text(prompt.versions.get()),
        "label": Label.objects.get(prompt=prompt).name,
        "rows": sorted(r.variables["name"] for r in DatasetRow.objects.filter(version__dataset=dataset)),
        "results": EvalResult.objects.filter(run=run).count(),
        "column_version": str(EvalColumn.objects.get(run=run).prompt_version.prompt_id),
        "grants": sorted(f"{g.prompt_id is not None}:{g.role}" for g in Grant.objects.all()),
        "links": ShareLink.objects.get(name="snapshot link").prompt_id == prompt.pk,
        "webhook": WebhookEndpoint.objects.get(prompt=prompt).url,
        "deliveries": WebhookDelivery.objects.count(),
        "content_types": sorted(f"{ct.app_label}.{ct.model}" for ct in ContentType.objects.filter(
            model__in=["dataset", "grant", "webhookendpoint", "prompt"])),
    }
    # New writes through the new models.
    version = services.version_create(prompt=prompt, author=owner, parent_id=prompt.versions.get().pk,
                                      body="Hello again {{name}}.\n", model_name="fixed-cost",
                                      message="after")
    child = datasets.dataset_version_create(dataset=dataset, author=owner,
                                            base_version_id=dataset.versions.get().pk,
                                            add=[{"variables": {"name": "Cy"}, "expected": "Hi Cy"}])
    ShareLink.objects.create(dataset=dataset, mode="login", token_hash="0" * 64, created_by=owner)
    found["new_version"] = version.number
    found["new_rows"] = child.rows.count()
    found["new_links"] = ShareLink.objects.count()
    if connection.vendor == "postgresql":
        found["refused"] = {
            "promptversion": _refused("playground_promptversion", "message"),
            "datasetversion": _refused("playground_datasetversion", "message"),
            "datasetrow": _refused("playground_datasetrow", "expected"),
            "evalcolumn": _refused("playground_evalcolumn", "model_name"),
            "evalresult": _refused("playground_evalresult", "output"),
        }
    print(json.dumps(found))


if __name__ == "__main__":
    main()
