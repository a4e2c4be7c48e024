"""Prompts, versions, labels and bodies (squashed). On PostgreSQL a trigger rejects any
UPDATE that changes a prompt version's content: immutability holds below the ORM too
(raw SQL, other clients). Only the author pointer may change (cleared when an account goes)."""

import django.db.models.deletion
import uuid
from django.conf import settings
from core.migrations_ops import postgresql_sql

from django.db import migrations, models

VERSION_IMMUTABLE = """
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
DROP TRIGGER IF EXISTS playground_version_immutable ON playground_promptversion;
CREATE TRIGGER playground_version_immutable
    BEFORE UPDATE ON playground_promptversion
    FOR EACH ROW EXECUTE FUNCTION playground_version_immutable();
"""

DROP = """
DROP TRIGGER IF EXISTS playground_version_immutable ON playground_promptversion;
DROP FUNCTION IF EXISTS playground_version_immutable();
"""


class Migration(migrations.Migration):

    initial = True

    # The migrations this one squashes (it has the first one's name): a database that
    # applied them all sees it as applied.
    replaces = [
        ('playground', '0002_version_immutable_trigger'),
        ('playground', '0003_sharing'),
        ('playground', '0004_evals'),
        ('playground', '0005_webhooks'),
        ('playground', '0006_evals_immutable_triggers'),
        ('playground', '0007_label_split'),
        ('playground', '0008_protected_labels'),
        ('playground', '0009_eval_references_restrict'),
        ('playground', '0010_version_merge_parent'),
        ('playground', '0011_dataset_imports'),
        ('playground', '0012_transfer_offer'),
        ('playground', '0013_eval_result_served'),
        ('playground', '0014_webhook_sweep'),
        ('playground', '0015_eval_result_cache_hit'),
        ('playground', '0015_version_tools'),
        ('playground', '0016_dataset_sharing'),
        ('playground', '0017_merge_0015_version_tools_0016_dataset_sharing'),
        ('playground', '0018_dataset_import_lease'),
    ]

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='Blob',
            fields=[
                ('sha256', models.CharField(max_length=64, primary_key=True, serialize=False)),
                ('size', models.BigIntegerField()),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
        ),
        migrations.CreateModel(
            name='Prompt',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('title', models.CharField(max_length=200)),
                ('description', models.TextField(blank=True, default='')),
                ('version_count', models.PositiveIntegerField(default=0)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('forked_from_prompt', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='forks', to='playground.prompt')),
                ('owner', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='prompts', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['-updated_at', '-id'],
            },
        ),
        migrations.CreateModel(
            name='Label',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=63)),
                ('split', models.JSONField(blank=True, null=True)),
                ('protected', models.BooleanField(default=False)),
                ('require_approval', models.BooleanField(default=False)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('prompt', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='labels', to='playground.prompt')),
            ],
            options={
                'ordering': ['name'],
            },
        ),
        migrations.CreateModel(
            name='PromptVersion',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('number', models.PositiveIntegerField()),
                ('depth', models.PositiveIntegerField()),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('message', models.TextField(blank=True, default='')),
                ('model_name', models.CharField(max_length=100)),
                ('temperature', models.FloatField(blank=True, null=True)),
                ('max_tokens', models.PositiveIntegerField(blank=True, null=True)),
                ('top_p', models.FloatField(blank=True, null=True)),
                ('stop', models.JSONField(blank=True, default=list)),
                ('system', models.TextField(blank=True, default='')),
                ('variables', models.JSONField(blank=True, default=dict)),
                ('response_schema', models.JSONField(blank=True, null=True)),
                ('tools', models.JSONField(blank=True, default=list)),
                ('body_size', models.BigIntegerField()),
                ('body_sha256', models.CharField(max_length=64)),
                ('storage', models.CharField(choices=[('full', 'Full snapshot'), ('delta', 'Diff against parent')], max_length=8)),
                ('chain_length', models.PositiveIntegerField(default=0)),
                ('payload_inline', models.BinaryField(blank=True, null=True)),
                ('author', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('merge_parent', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='merge_children', to='playground.promptversion')),
                ('parent', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='children', to='playground.promptversion')),
                ('payload_blob', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='playground.blob')),
                ('prompt', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='versions', to='playground.prompt')),
            ],
            options={
                'ordering': ['number'],
            },
        ),
        migrations.AddField(
            model_name='prompt',
            name='forked_from_version',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='forks', to='playground.promptversion'),
        ),
        migrations.CreateModel(
            name='PendingLabelMove',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('eval_run', models.CharField(blank=True, default='', max_length=64)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('status', models.CharField(choices=[('pending', 'Pending'), ('approved', 'Approved'), ('rejected', 'Rejected')], default='pending', max_length=8)),
                ('decided_at', models.DateTimeField(blank=True, null=True)),
                ('reason', models.CharField(blank=True, default='', max_length=500)),
                ('decided_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('label', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='pending_moves', to='playground.label')),
                ('requested_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('from_version', models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='playground.promptversion')),
                ('to_version', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='playground.promptversion')),
            ],
            options={
                'ordering': ['-id'],
            },
        ),
        migrations.CreateModel(
            name='LabelMove',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('move', 'Move'), ('undo', 'Undo'), ('redo', 'Redo')], default='move', max_length=4)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('actor', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('label', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='moves', to='playground.label')),
                ('reverts', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='playground.labelmove')),
                ('from_version', models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='playground.promptversion')),
                ('to_version', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='playground.promptversion')),
            ],
            options={
                'ordering': ['id'],
            },
        ),
        migrations.AddField(
            model_name='label',
            name='version',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='labels', to='playground.promptversion'),
        ),
        migrations.AddConstraint(
            model_name='promptversion',
            constraint=models.UniqueConstraint(fields=('prompt', 'number'), name='uniq_prompt_version_number'),
        ),
        migrations.AddConstraint(
            model_name='promptversion',
            constraint=models.CheckConstraint(condition=models.Q(('payload_inline__isnull', True), ('payload_blob__isnull', True), _connector='XOR'), name='version_payload_exactly_one_place'),
        ),
        migrations.AddConstraint(
            model_name='promptversion',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('chain_length', 0), ('storage', 'full')), models.Q(('chain_length__gt', 0), ('parent__isnull', False), ('storage', 'delta')), _connector='OR'), name='version_delta_has_parent'),
        ),
        migrations.AddIndex(
            model_name='prompt',
            index=models.Index(fields=['owner', '-updated_at'], name='playground__owner_i_18a836_idx'),
        ),
        migrations.AddConstraint(
            model_name='label',
            constraint=models.UniqueConstraint(fields=('prompt', 'name'), name='uniq_prompt_label'),
        ),
        postgresql_sql(VERSION_IMMUTABLE, DROP),
    ]
