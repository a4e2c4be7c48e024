"""The gateway's models (squashed). On PostgreSQL, triggers reject every UPDATE of a
model version or a config document: published, they stay as they are below the ORM too."""

import django.db.models.deletion
from django.conf import settings
from core.migrations_ops import postgresql_sql

from django.db import migrations, models

IMMUTABLE = """
CREATE OR REPLACE FUNCTION inference_client_{name}_immutable() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION '{what} is immutable' USING ERRCODE = 'restrict_violation', HINT = 'Publish a new one instead.';
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS inference_client_{name}_immutable ON inference_client_{table};
CREATE TRIGGER inference_client_{name}_immutable BEFORE UPDATE ON inference_client_{table}
    FOR EACH ROW EXECUTE FUNCTION inference_client_{name}_immutable();
"""
DROP = """
DROP TRIGGER IF EXISTS inference_client_{name}_immutable ON inference_client_{table};
DROP FUNCTION IF EXISTS inference_client_{name}_immutable();
"""
TRIGGERS = [dict(name="modelversion", table="modelversion", what="a model version"),
            dict(name="configdocument", table="configdocumentrecord", what="a config document")]


class Migration(migrations.Migration):

    initial = True

    # The migrations this one squashes (it has the first one's name): a database that
    # applied them all sees it as applied.
    replaces = [
        ('inference_client', '0002_modelversion'),
        ('inference_client', '0003_config_documents'),
        ('inference_client', '0004_rollouts'),
        ('inference_client', '0005_usage_end_user'),
        ('inference_client', '0006_usage_prompt_version'),
        ('inference_client', '0007_batch_api'),
        ('inference_client', '0008_batch_file_tokens'),
        ('inference_client', '0009_batch_input_file_outlives_file'),
        ('inference_client', '0010_rollout_lease'),
        ('inference_client', '0011_usage_eval_run'),
        ('inference_client', '0012_config_publish_permission'),
    ]

    dependencies = [
        ('accounts', '0001_initial'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
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
                'permissions': [('publish_config', 'Can publish config documents and drive rollouts')],
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
        migrations.CreateModel(
            name='BatchFile',
            fields=[
                ('id', models.CharField(max_length=40, primary_key=True, serialize=False)),
                ('purpose', models.CharField(choices=[('batch', 'Batch'), ('batch_output', 'Batch Output')], max_length=20)),
                ('filename', models.CharField(max_length=255)),
                ('bytes', models.PositiveBigIntegerField()),
                ('lines', models.PositiveIntegerField(default=0)),
                ('endpoint', models.CharField(blank=True, default='', max_length=40)),
                ('tokens', models.PositiveBigIntegerField(default=0)),
                ('blob_key', models.CharField(max_length=200)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='batch_files', to=settings.AUTH_USER_MODEL)),
            ],
        ),
        migrations.CreateModel(
            name='Batch',
            fields=[
                ('id', models.CharField(max_length=40, primary_key=True, serialize=False)),
                ('endpoint', models.CharField(max_length=40)),
                ('completion_window', models.CharField(default='24h', max_length=10)),
                ('status', models.CharField(choices=[('validating', 'Validating'), ('in_progress', 'In Progress'), ('finalizing', 'Finalizing'), ('completed', 'Completed'), ('failed', 'Failed'), ('expired', 'Expired'), ('cancelling', 'Cancelling'), ('cancelled', 'Cancelled')], default='validating', max_length=20)),
                ('total', models.PositiveIntegerField(default=0)),
                ('completed', models.PositiveIntegerField(default=0)),
                ('failed', models.PositiveIntegerField(default=0)),
                ('metadata', models.JSONField(blank=True, null=True)),
                ('cancel_requested', models.BooleanField(default=False)),
                ('lease_owner', models.CharField(blank=True, default='', max_length=64)),
                ('lease_until', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('in_progress_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('expires_at', models.DateTimeField()),
                ('api_key', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to='accounts.apikey')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='batches', to=settings.AUTH_USER_MODEL)),
                ('error_file', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='inference_client.batchfile')),
                ('input_file', models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='batches', to='inference_client.batchfile')),
                ('output_file', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='inference_client.batchfile')),
            ],
        ),
        migrations.CreateModel(
            name='KeyPreference',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('semantic_cache', models.BooleanField(default=False)),
                ('api_key', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='inference_preference', to='accounts.apikey')),
            ],
        ),
        migrations.CreateModel(
            name='ModelVersion',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('model', models.CharField(max_length=100)),
                ('version', models.CharField(max_length=100)),
                ('manifest', models.JSONField()),
                ('manifest_sha256', models.CharField(max_length=64)),
                ('total_size', models.BigIntegerField()),
                ('created_by', models.CharField(max_length=200)),
                ('created_at', models.DateTimeField()),
            ],
            options={
                'ordering': ['model', 'created_at'],
                'constraints': [models.UniqueConstraint(fields=('model', 'version'), name='uniq_model_version')],
            },
        ),
        migrations.CreateModel(
            name='Rollout',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('model', models.CharField(max_length=100)),
                ('version', models.CharField(max_length=100)),
                ('stable_version', models.CharField(max_length=100)),
                ('steps', models.JSONField()),
                ('step_index', models.IntegerField(default=-1)),
                ('state', models.CharField(choices=[('waiting_for_ready', 'Waiting'), ('running', 'Running'), ('paused', 'Paused'), ('promoted', 'Promoted'), ('rolled_back', 'Rolled Back'), ('failed', 'Failed')], default='waiting_for_ready', max_length=20)),
                ('requested', models.CharField(blank=True, default='', max_length=20)),
                ('base_document', models.PositiveIntegerField()),
                ('reason', models.TextField(blank=True, default='')),
                ('figures', models.JSONField(blank=True, default=dict)),
                ('driver', models.CharField(blank=True, default='', max_length=200)),
                ('lease_expires_at', models.DateTimeField(blank=True, null=True)),
                ('created_by', models.CharField(max_length=200)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
            ],
            options={
                'ordering': ['-id'],
                'constraints': [models.UniqueConstraint(condition=models.Q(('state__in', ['waiting_for_ready', 'running', 'paused'])), fields=('model',), name='one_active_rollout_per_model')],
            },
        ),
        migrations.CreateModel(
            name='BatchLine',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('line', models.PositiveIntegerField()),
                ('custom_id', models.CharField(max_length=512)),
                ('request_id', models.CharField(max_length=64)),
                ('status_code', models.PositiveSmallIntegerField()),
                ('body', models.JSONField()),
                ('batch', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='lines', to='inference_client.batch')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('batch', 'custom_id'), name='batch_line_once')],
            },
        ),
        migrations.CreateModel(
            name='UsageRecord',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('request_id', models.CharField(max_length=64, unique=True)),
                ('model', models.CharField(max_length=100)),
                ('version', models.CharField(blank=True, default='', max_length=100)),
                ('tier', models.CharField(max_length=10)),
                ('prompt_tokens', models.PositiveIntegerField(default=0)),
                ('completion_tokens', models.PositiveIntegerField(default=0)),
                ('latency_ms', models.PositiveIntegerField(default=0)),
                ('ttft_ms', models.PositiveIntegerField(blank=True, null=True)),
                ('cache_hit', models.CharField(blank=True, default='', max_length=10)),
                ('status', models.CharField(choices=[('ok', 'Ok'), ('error', 'Error'), ('cancelled', 'Cancelled')], max_length=10)),
                ('error_code', models.CharField(blank=True, default='', max_length=64)),
                ('end_user', models.CharField(blank=True, default='', max_length=256)),
                ('prompt_version', models.UUIDField(blank=True, null=True)),
                ('prompt_label', models.CharField(blank=True, default='', max_length=63)),
                ('eval_run', models.UUIDField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                ('api_key', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='usage', to='accounts.apikey')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='inference_usage', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['-created_at', '-id'],
                'indexes': [models.Index(fields=['user', '-created_at'], name='inference_c_user_id_f66961_idx'), models.Index(fields=['user', 'prompt_version'], name='inference_c_user_id_09fc6b_idx'), models.Index(condition=models.Q(('eval_run__isnull', False)), fields=['eval_run'], name='usage_eval_run')],
            },
        ),
        *[postgresql_sql(IMMUTABLE.format(**t), DROP.format(**t)) for t in TRIGGERS],
    ]
