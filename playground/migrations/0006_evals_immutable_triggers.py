"""PostgreSQL: reject UPDATEs of dataset versions, dataset rows, run columns and
cell results, so a run's record of what it used holds below the ORM too. Only a
dataset version's author pointer may change (cleared when an account is deleted)."""

from django.db import migrations

TABLES = {"playground_datasetversion": "author_id", "playground_datasetrow": None,
          "playground_evalcolumn": None, "playground_evalresult": None}


def _create(table, mutable):
    strip = f" - '{mutable}'" if mutable else ""
    return f"""
CREATE OR REPLACE FUNCTION {table}_immutable() RETURNS trigger AS $$
BEGIN
    IF (to_jsonb(NEW){strip}) IS DISTINCT FROM (to_jsonb(OLD){strip}) THEN
        RAISE EXCEPTION '{table} rows are immutable'
            USING ERRCODE = 'restrict_violation', HINT = 'Make a new version instead.';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER {table}_immutable BEFORE UPDATE ON {table}
    FOR EACH ROW EXECUTE FUNCTION {table}_immutable();
"""


def _drop(table, mutable):
    return f"DROP TRIGGER IF EXISTS {table}_immutable ON {table}; DROP FUNCTION IF EXISTS {table}_immutable();"


def _on_postgresql(build):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for table, mutable in TABLES.items():
                schema_editor.execute(build(table, mutable), params=None)  # no %-interpolation of RAISE

    return run


class Migration(migrations.Migration):
    dependencies = [("playground", "0005_webhooks")]

    operations = [migrations.RunPython(_on_postgresql(_create), _on_postgresql(_drop))]
