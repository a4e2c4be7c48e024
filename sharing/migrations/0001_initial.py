"""Share links, grants, the audit log and transfer offers.

These models were playground's until the app was split out; their tables kept their
names. On a database upgraded from then, the tables exist (IfTableMissing skips them)
and the content types move from playground to this app."""

import django.db.models.deletion
import uuid
from django.conf import settings
from core.migrations_ops import IfTableMissing, move_content_types

from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('accounts', '0001_initial'),
        ('evals', '0001_initial'),
        ('playground', '0001_initial'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        IfTableMissing('playground_sharelink', [
        migrations.CreateModel(
            name='AuditEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('prompt_id', models.UUIDField(blank=True, db_index=True, null=True)),
                ('dataset_id', models.UUIDField(blank=True, db_index=True, null=True)),
                ('actor_name', models.CharField(blank=True, default='', max_length=150)),
                ('action', models.CharField(max_length=32)),
                ('target', models.CharField(max_length=200)),
                ('detail', models.JSONField(blank=True, default=dict)),
                ('request_id', models.CharField(blank=True, default='', max_length=64)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('actor', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'db_table': 'playground_auditevent',
                'ordering': ['-id'],
                'indexes': [models.Index(fields=['prompt_id', '-id'], name='playground__prompt__d49c90_idx')],
            },
        ),
        migrations.CreateModel(
            name='Grant',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('role', models.CharField(choices=[('viewer', 'Viewer'), ('editor', 'Editor')], max_length=8)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('expires_at', models.DateTimeField(blank=True, null=True)),
                ('revoked_at', models.DateTimeField(blank=True, null=True)),
                ('created_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('dataset', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='grants', to='evals.dataset')),
                ('prompt', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='grants', to='playground.prompt')),
                ('team', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='prompt_grants', to='accounts.team')),
                ('user', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='prompt_grants', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'db_table': 'playground_grant',
                'ordering': ['-created_at', '-id'],
                'indexes': [models.Index(fields=['user', 'prompt'], name='playground__user_id_fba863_idx'), models.Index(fields=['team', 'prompt'], name='playground__team_id_73a393_idx'), models.Index(fields=['user', 'dataset'], name='playground__user_id_9e87fb_idx'), models.Index(fields=['team', 'dataset'], name='playground__team_id_56fe51_idx')],
                'constraints': [models.CheckConstraint(condition=models.Q(('user__isnull', True), ('team__isnull', True), _connector='XOR'), name='grant_exactly_one_grantee'), models.CheckConstraint(condition=models.Q(('prompt__isnull', True), ('dataset__isnull', True), _connector='XOR'), name='grant_exactly_one_subject'), models.UniqueConstraint(condition=models.Q(('revoked_at__isnull', True)), fields=('prompt', 'user'), name='uniq_live_grant_user'), models.UniqueConstraint(condition=models.Q(('revoked_at__isnull', True)), fields=('prompt', 'team'), name='uniq_live_grant_team'), models.UniqueConstraint(condition=models.Q(('revoked_at__isnull', True)), fields=('dataset', 'user'), name='uniq_live_dataset_grant_user'), models.UniqueConstraint(condition=models.Q(('revoked_at__isnull', True)), fields=('dataset', 'team'), name='uniq_live_dataset_grant_team')],
            },
        ),
        migrations.CreateModel(
            name='ShareLink',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('mode', models.CharField(choices=[('public', 'Anyone with the link'), ('login', 'Any signed-in user with the link')], max_length=8)),
                ('name', models.CharField(blank=True, default='', max_length=100)),
                ('token_hash', models.CharField(max_length=64, unique=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('expires_at', models.DateTimeField(blank=True, null=True)),
                ('revoked_at', models.DateTimeField(blank=True, null=True)),
                ('expiry_audited_at', models.DateTimeField(blank=True, null=True)),
                ('created_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('dataset', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='share_links', to='evals.dataset')),
                ('prompt', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='share_links', to='playground.prompt')),
                ('version', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='playground.promptversion')),
            ],
            options={
                'db_table': 'playground_sharelink',
                'ordering': ['-created_at'],
                'indexes': [models.Index(fields=['prompt', '-created_at'], name='playground__prompt__bc8a31_idx'), models.Index(fields=['dataset', '-created_at'], name='playground__dataset_5f1849_idx')],
                'constraints': [models.CheckConstraint(condition=models.Q(('prompt__isnull', True), ('dataset__isnull', True), _connector='XOR'), name='link_exactly_one_subject')],
            },
        ),
        migrations.CreateModel(
            name='TransferOffer',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('keep_access', models.BooleanField(default=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('from_user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('prompt', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='transfer_offers', to='playground.prompt')),
                ('to_user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='transfer_offers', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'db_table': 'playground_transferoffer',
                'constraints': [models.UniqueConstraint(fields=('prompt', 'to_user'), name='uniq_transfer_offer')],
            },
        ),
        ]),
        move_content_types('playground', 'sharing', ['ShareLink', 'Grant', 'AuditEvent', 'TransferOffer']),
    ]
