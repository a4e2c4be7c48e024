"""Datasets, runs, results and label gates. On PostgreSQL, triggers reject UPDATEs of
dataset versions, rows, run columns and results: a run's record of what it used holds
below the ORM too (a dataset version's author pointer may change: cleared when an account goes).

These models were playground's until the app was split out; their tables kept their
names. On a database upgraded from then, the tables exist (IfTableMissing skips them)
and the content types move from playground to this app."""

import django.db.models.deletion
import uuid
from django.conf import settings
from core.migrations_ops import IfTableMissing, move_content_types, immutable_rows_sql, postgresql_sql

from django.db import migrations, models

# Tables whose rows never change (and the one column that may: an author pointer).
IMMUTABLE = {"playground_datasetversion": "author_id", "playground_datasetrow": None,
             "playground_evalcolumn": None, "playground_evalresult": None}


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('playground', '0001_initial'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        IfTableMissing('playground_dataset', [
        migrations.CreateModel(
            name='Dataset',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('name', models.CharField(max_length=200)),
                ('description', models.TextField(blank=True, default='')),
                ('version_count', models.PositiveIntegerField(default=0)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('owner', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='datasets', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'db_table': 'playground_dataset',
                'ordering': ['-updated_at', '-id'],
            },
        ),
        migrations.CreateModel(
            name='DatasetVersion',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('number', models.PositiveIntegerField()),
                ('message', models.TextField(blank=True, default='')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('row_count', models.PositiveIntegerField(default=0)),
                ('variables', models.JSONField(default=list)),
                ('author', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('dataset', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='versions', to='evals.dataset')),
                ('parent', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='evals.datasetversion')),
            ],
            options={
                'db_table': 'playground_datasetversion',
                'ordering': ['number'],
            },
        ),
        migrations.CreateModel(
            name='DatasetRow',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('index', models.PositiveIntegerField()),
                ('key', models.UUIDField(default=uuid.uuid4)),
                ('variables', models.JSONField(default=dict)),
                ('expected', models.TextField(blank=True, null=True)),
                ('metadata', models.JSONField(blank=True, default=dict)),
                ('version', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='rows', to='evals.datasetversion')),
            ],
            options={
                'db_table': 'playground_datasetrow',
                'ordering': ['index'],
            },
        ),
        migrations.CreateModel(
            name='DatasetImport',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('fmt', models.CharField(max_length=8)),
                ('replace', models.BooleanField(default=False)),
                ('skip_invalid', models.BooleanField(default=False)),
                ('message', models.TextField(blank=True, default='')),
                ('size', models.BigIntegerField()),
                ('status', models.CharField(default='queued', max_length=8)),
                ('lines_total', models.PositiveIntegerField(default=0)),
                ('lines_done', models.PositiveIntegerField(default=0)),
                ('valid', models.PositiveIntegerField(default=0)),
                ('error_count', models.PositiveIntegerField(default=0)),
                ('errors', models.JSONField(default=list)),
                ('error_code', models.CharField(blank=True, default='', max_length=64)),
                ('error_message', models.TextField(blank=True, default='')),
                ('lease_until', models.DateTimeField(blank=True, null=True)),
                ('lease_owner', models.CharField(blank=True, default='', max_length=64)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('author', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('dataset', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='imports', to='evals.dataset')),
                ('base', models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='evals.datasetversion')),
                ('version', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='evals.datasetversion')),
            ],
            options={
                'db_table': 'playground_datasetimport',
            },
        ),
        migrations.CreateModel(
            name='EvalColumn',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('index', models.PositiveIntegerField()),
                ('model_name', models.CharField(max_length=100)),
                ('params', models.JSONField(default=dict)),
                ('prompt_version', models.ForeignKey(on_delete=django.db.models.deletion.RESTRICT, related_name='+', to='playground.promptversion')),
            ],
            options={
                'db_table': 'playground_evalcolumn',
                'ordering': ['index'],
            },
        ),
        migrations.CreateModel(
            name='EvalRun',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('name', models.CharField(blank=True, default='', max_length=200)),
                ('evaluators', models.JSONField(default=list)),
                ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('done', 'Done'), ('cancelled', 'Cancelled')], default='queued', max_length=10)),
                ('total', models.PositiveIntegerField(default=0)),
                ('completed', models.PositiveIntegerField(default=0)),
                ('failed', models.PositiveIntegerField(default=0)),
                ('lease_until', models.DateTimeField(blank=True, null=True)),
                ('lease_owner', models.CharField(blank=True, default='', max_length=64)),
                ('cancel_requested', models.BooleanField(default=False)),
                ('summary', models.JSONField(blank=True, default=dict)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('dataset_version', models.ForeignKey(on_delete=django.db.models.deletion.RESTRICT, related_name='runs', to='evals.datasetversion')),
                ('owner', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='eval_runs', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'db_table': 'playground_evalrun',
                'ordering': ['-created_at', '-id'],
            },
        ),
        migrations.CreateModel(
            name='EvalResult',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('row_index', models.PositiveIntegerField()),
                ('output', models.TextField(blank=True, default='')),
                ('error_code', models.CharField(blank=True, default='', max_length=64)),
                ('error_message', models.TextField(blank=True, default='')),
                ('scores', models.JSONField(default=dict)),
                ('passed', models.BooleanField(null=True)),
                ('latency_ms', models.PositiveIntegerField(null=True)),
                ('prompt_tokens', models.PositiveIntegerField(default=0)),
                ('completion_tokens', models.PositiveIntegerField(default=0)),
                ('served', models.CharField(blank=True, default='', max_length=200)),
                ('cache_hit', models.CharField(blank=True, default='', max_length=10)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('column', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='results', to='evals.evalcolumn')),
                ('row', models.ForeignKey(on_delete=django.db.models.deletion.RESTRICT, related_name='+', to='evals.datasetrow')),
                ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='results', to='evals.evalrun')),
            ],
            options={
                'db_table': 'playground_evalresult',
                'ordering': ['row_index', 'column_id'],
            },
        ),
        migrations.AddField(
            model_name='evalcolumn',
            name='run',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='columns', to='evals.evalrun'),
        ),
        migrations.CreateModel(
            name='LabelGate',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('label_name', models.CharField(max_length=63)),
                ('evaluator', models.CharField(max_length=64)),
                ('margin', models.FloatField(default=0.0)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('created_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('dataset', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='evals.dataset')),
                ('prompt', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='label_gates', to='playground.prompt')),
            ],
            options={
                'db_table': 'playground_labelgate',
            },
        ),
        migrations.CreateModel(
            name='GateDecision',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('passed', models.BooleanField()),
                ('code', models.CharField(max_length=64)),
                ('reason', models.TextField()),
                ('figures', models.JSONField(default=dict)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('actor', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('baseline_version', models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='playground.promptversion')),
                ('candidate_version', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='playground.promptversion')),
                ('run', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='evals.evalrun')),
                ('gate', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='decisions', to='evals.labelgate')),
            ],
            options={
                'db_table': 'playground_gatedecision',
                'ordering': ['-id'],
            },
        ),
        migrations.AddIndex(
            model_name='dataset',
            index=models.Index(fields=['owner', '-updated_at'], name='playground__owner_i_559ff5_idx'),
        ),
        migrations.AddConstraint(
            model_name='datasetversion',
            constraint=models.UniqueConstraint(fields=('dataset', 'number'), name='uniq_dataset_version'),
        ),
        migrations.AddConstraint(
            model_name='datasetrow',
            constraint=models.UniqueConstraint(fields=('version', 'index'), name='uniq_dataset_row_index'),
        ),
        migrations.AddIndex(
            model_name='evalrun',
            index=models.Index(fields=['owner', '-created_at'], name='playground__owner_i_d7b9f5_idx'),
        ),
        migrations.AddIndex(
            model_name='evalrun',
            index=models.Index(fields=['status', 'lease_until'], name='playground__status_e43e39_idx'),
        ),
        migrations.AddIndex(
            model_name='evalresult',
            index=models.Index(fields=['run', 'row_index'], name='playground__run_id_247d84_idx'),
        ),
        migrations.AddConstraint(
            model_name='evalresult',
            constraint=models.UniqueConstraint(fields=('column', 'row'), name='uniq_eval_cell'),
        ),
        migrations.AddConstraint(
            model_name='evalcolumn',
            constraint=models.UniqueConstraint(fields=('run', 'index'), name='uniq_eval_column'),
        ),
        migrations.AddConstraint(
            model_name='labelgate',
            constraint=models.UniqueConstraint(fields=('prompt', 'label_name'), name='uniq_label_gate'),
        ),
        ]),
        move_content_types('playground', 'evals', ['Dataset', 'DatasetVersion', 'DatasetRow', 'DatasetImport', 'EvalRun', 'EvalColumn', 'EvalResult', 'LabelGate', 'GateDecision']),
        *[postgresql_sql(*immutable_rows_sql(table, mutable)) for table, mutable in IMMUTABLE.items()],
    ]
