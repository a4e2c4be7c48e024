"""The upgrade path from the schema before evals, sharing and webhooks left the
playground app and every app's migrations were squashed (docs/changelog.md).

`postgresql.sql` and `sqlite.sql` are that database with a few rows (a user, a
prompt with a version and a label, a dataset with rows, an eval run with results,
grants, a share link, a webhook endpoint and delivery), dumped from the last
schema of the old migrations (pg_dump --no-owner --no-privileges --inserts;
sqlite3 .dump). Each test loads one into a fresh database, runs `migrate` as an
operator would, and reads and writes through today's models in that process
(check.py)."""

import json
import os
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
from django.conf import settings

from tests.conftest import with_services

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def _manage(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=240)


def _upgrade_and_check(env: dict) -> dict:
    migrated = _manage(env, "migrate", "--no-input")
    assert migrated.returncode == 0, migrated.stderr
    # The old migrations were all applied: of the squashed initial migrations only the new
    # apps' run (on the tables they already have), and the 0001 of an app added since
    # (generations, tables of its own); migrations written since run as usual.
    applied = [line.split()[1] for line in migrated.stdout.splitlines()
               if line.strip().startswith("Applying")]
    initial = sorted(name for name in applied if ".0001_" in name)
    assert initial == ["evals.0001_initial...", "generations.0001_initial...", "sharing.0001_initial...",
                       "webhooks.0001_initial..."]
    unchanged = _manage(env, "makemigrations", "--check", "--dry-run")
    assert unchanged.returncode == 0, unchanged.stdout + unchanged.stderr
    checked = subprocess.run([sys.executable, "-m", "tests.upgrade.check"], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stderr
    found = json.loads(checked.stdout.strip().splitlines()[-1])
    assert found["prompt_owner"] == "snap-owner"
    assert found["version_body"] == "Hello {{name}}, snapshot.\n"
    assert found["label"] == "production"
    assert found["rows"] == ["Ada", "Bob"]
    assert found["results"] == 2
    assert found["column_version"] == "11111111-1111-4111-8111-111111111111"
    assert found["grants"] == ["False:editor", "True:viewer"]  # on the dataset, on the prompt
    assert found["links"] is True
    assert found["webhook"] == "https://hooks.example.com/in"
    assert found["deliveries"] == 1
    assert found["content_types"] == ["evals.dataset", "playground.prompt", "sharing.grant",
                                      "webhooks.webhookendpoint"]
    assert found["new_version"] == 2
    assert found["new_rows"] == 3
    assert found["new_links"] == 2
    return found


def _env(**overrides) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PYTEST_CURRENT_TEST")}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", **overrides)
    return env


@pytest.mark.needs_services
def test_postgresql_database_of_the_old_migrations_upgrades():
    base = settings.DATABASES["default"]
    server = dict(host=base["HOST"] or "127.0.0.1", port=base["PORT"] or 5432, user=base["USER"],
                  password=base["PASSWORD"] or None)
    name = f"promptyard_upgrade_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dbname="postgres", autocommit=True, **server) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        with psycopg.connect(dbname=name, autocommit=True, **server) as conn:
            conn.execute((HERE / "postgresql.sql").read_text())
        url = f"postgres://{base['USER']}@{server['host']}:{server['port']}/{name}"
        found = _upgrade_and_check(_env(DATABASE_URL=url, PGPASSWORD=server["password"] or ""))
        # The triggers that keep versions and eval records immutable hold after the upgrade.
        assert found["refused"] == {"promptversion": True, "datasetversion": True, "datasetrow": True,
                                    "evalcolumn": True, "evalresult": True}
    finally:
        with psycopg.connect(dbname="postgres", autocommit=True, **server) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.skipif(with_services(), reason="the embedded default's database (SQLite): second pass")
def test_sqlite_database_of_the_old_migrations_upgrades(tmp_path):
    with sqlite3.connect(tmp_path / "db.sqlite3") as db:
        db.executescript((HERE / "sqlite.sql").read_text())
    found = _upgrade_and_check(_env(PROMPTYARD_VAR_DIR=str(tmp_path)))
    assert "refused" not in found  # SQLite has no triggers of ours: the ORM refuses (tests/evals)


@pytest.mark.needs_services
@pytest.mark.django_db
def test_fresh_database_refuses_updates_of_immutable_rows():
    """The squashed migrations create the triggers on a fresh database too (this
    test's database is migrated from scratch): raw SQL cannot change a version."""
    from django.db import DatabaseError, connection, transaction

    from evals import datasets
    from evals.models import EvalColumn, EvalResult, EvalRun
    from tests.factories import PromptVersionFactory

    version = PromptVersionFactory()
    owner = version.prompt.owner
    dataset = datasets.dataset_create(owner=owner, name="immutable")
    rows = datasets.dataset_version_create(dataset=dataset, author=owner, add=[{"variables": {"q": "a"}}])
    run = EvalRun.objects.create(owner=owner, dataset_version=rows, evaluators=[])
    column = EvalColumn.objects.create(run=run, index=0, prompt_version=version, model_name="m")
    EvalResult.objects.create(run=run, column=column, row=rows.rows.get(), row_index=0, output="x")
    changes = [("playground_promptversion", "message"), ("playground_datasetversion", "message"),
               ("playground_datasetrow", "expected"), ("playground_evalcolumn", "model_name"),
               ("playground_evalresult", "output")]
    for table, column_name in changes:
        with pytest.raises(DatabaseError, match="immutable"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(f"UPDATE {table} SET {column_name} = %s", ["changed"])
