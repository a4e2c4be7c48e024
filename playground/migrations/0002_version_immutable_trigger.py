"""PostgreSQL: reject any UPDATE that changes a prompt version's content, so
immutability holds below the ORM too (raw SQL, other clients). Only the
author pointer may change (cleared when an account is deleted)."""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION playground_version_immutable() RETURNS trigger AS $$
BEGIN
    IF (to_jsonb(NEW) - 'author_id') IS DISTINCT FROM (to_jsonb(OLD) - 'author_id') THEN
        RAISE EXCEPTION 'prompt version % is immutable', OLD.id
            USING ERRCODE = 'restrict_violation',
                  HINT = 'Create a child version instead.';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER playground_version_immutable
    BEFORE UPDATE ON playground_promptversion
    FOR EACH ROW EXECUTE FUNCTION playground_version_immutable();
"""

DROP = """
DROP TRIGGER IF EXISTS playground_version_immutable ON playground_promptversion;
DROP FUNCTION IF EXISTS playground_version_immutable();
"""


def _on_postgresql(sql):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql, params=None)  # no %-interpolation of RAISE

    return run


class Migration(migrations.Migration):
    dependencies = [("playground", "0001_initial")]

    operations = [migrations.RunPython(_on_postgresql(CREATE), _on_postgresql(DROP))]
