"""Model versions (issue #15). On PostgreSQL a trigger rejects every UPDATE of a
row, so a published version stays immutable below the ORM too (raw SQL, other
clients), as prompt versions do (playground 0002)."""

from django.db import migrations, models

CREATE = """
CREATE OR REPLACE FUNCTION inference_client_modelversion_immutable() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'model version %@% is immutable', OLD.model, OLD.version
        USING ERRCODE = 'restrict_violation',
              HINT = 'Publish a new version instead.';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER inference_client_modelversion_immutable
    BEFORE UPDATE ON inference_client_modelversion
    FOR EACH ROW EXECUTE FUNCTION inference_client_modelversion_immutable();
"""

DROP = """
DROP TRIGGER IF EXISTS inference_client_modelversion_immutable ON inference_client_modelversion;
DROP FUNCTION IF EXISTS inference_client_modelversion_immutable();
"""


def _on_postgresql(sql):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql, params=None)  # no %-interpolation of RAISE

    return run


class Migration(migrations.Migration):
    dependencies = [("inference_client", "0001_initial")]

    operations = [
        migrations.CreateModel(
            name="ModelVersion",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("model", models.CharField(max_length=100)),
                ("version", models.CharField(max_length=100)),
                ("manifest", models.JSONField()),
                ("manifest_sha256", models.CharField(max_length=64)),
                ("total_size", models.BigIntegerField()),
                ("created_by", models.CharField(max_length=200)),
                ("created_at", models.DateTimeField()),
            ],
            options={"ordering": ["model", "created_at"]},
        ),
        migrations.AddConstraint(
            model_name="modelversion",
            constraint=models.UniqueConstraint(fields=("model", "version"), name="uniq_model_version"),
        ),
        migrations.RunPython(_on_postgresql(CREATE), _on_postgresql(DROP)),
    ]
