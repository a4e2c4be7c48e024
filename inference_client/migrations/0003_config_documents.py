"""Config documents and the control plane's audit log (issue #16). On PostgreSQL a
trigger rejects every UPDATE of a document, as for model versions (0002)."""

from django.db import migrations, models

CREATE = """
CREATE OR REPLACE FUNCTION inference_client_configdocument_immutable() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'config document % is immutable', OLD.number
        USING ERRCODE = 'restrict_violation', HINT = 'Publish a new document instead.';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER inference_client_configdocument_immutable
    BEFORE UPDATE ON inference_client_configdocumentrecord
    FOR EACH ROW EXECUTE FUNCTION inference_client_configdocument_immutable();
"""

DROP = """
DROP TRIGGER IF EXISTS inference_client_configdocument_immutable ON inference_client_configdocumentrecord;
DROP FUNCTION IF EXISTS inference_client_configdocument_immutable();
"""


def _on_postgresql(sql):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql, params=None)

    return run


class Migration(migrations.Migration):

    dependencies = [
        ('inference_client', '0002_modelversion'),
    ]

    operations = [
        migrations.CreateModel(
            name='ConfigDocumentRecord',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('number', models.PositiveIntegerField(unique=True)),
                ('parent', models.PositiveIntegerField(null=True)),
                ('content', models.JSONField()),
                ('digest', models.CharField(max_length=64)),
                ('document', models.TextField()),
                ('created_by', models.CharField(max_length=200)),
                ('reason', models.TextField(blank=True, default='')),
                ('created_at', models.DateTimeField()),
            ],
            options={
                'ordering': ['-number'],
            },
        ),
        migrations.CreateModel(
            name='ControlEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('action', models.CharField(max_length=32)),
                ('target', models.CharField(max_length=200)),
                ('actor_name', models.CharField(blank=True, default='', max_length=200)),
                ('detail', models.JSONField(blank=True, default=dict)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
            options={
                'ordering': ['-id'],
            },
        ),
        migrations.RunPython(_on_postgresql(CREATE), _on_postgresql(DROP)),
    ]
