"""Webhook endpoints and deliveries.

These models were playground's until the app was split out; their tables kept their
names. On a database upgraded from then, the tables exist (IfTableMissing skips them)
and the content types move from playground to this app."""

import django.db.models.deletion
import uuid
import webhooks.models
from django.conf import settings
from core.migrations_ops import IfTableMissing, move_content_types

from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('playground', '0001_initial'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        IfTableMissing('playground_webhookendpoint', [
        migrations.CreateModel(
            name='WebhookEndpoint',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('url', models.CharField(max_length=2000)),
                ('events', models.JSONField(default=list)),
                ('secret', models.CharField(default=webhooks.models.new_secret, max_length=100)),
                ('description', models.CharField(blank=True, default='', max_length=200)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('secret_rotated_at', models.DateTimeField(blank=True, null=True)),
                ('owner', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='webhooks', to=settings.AUTH_USER_MODEL)),
                ('prompt', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='webhooks', to='playground.prompt')),
            ],
            options={
                'db_table': 'playground_webhookendpoint',
                'ordering': ['-created_at'],
            },
        ),
        migrations.CreateModel(
            name='WebhookDelivery',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('event', models.CharField(max_length=40)),
                ('event_id', models.UUIDField()),
                ('body', models.BinaryField()),
                ('timestamp', models.BigIntegerField()),
                ('signature', models.CharField(max_length=100)),
                ('status', models.CharField(choices=[('pending', 'Pending'), ('succeeded', 'Succeeded'), ('failed', 'Failed')], default='pending', max_length=10)),
                ('attempts', models.PositiveIntegerField(default=0)),
                ('response_code', models.PositiveIntegerField(blank=True, null=True)),
                ('last_error', models.CharField(blank=True, default='', max_length=500)),
                ('next_attempt_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('redelivery_of', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='webhooks.webhookdelivery')),
                ('endpoint', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to='webhooks.webhookendpoint')),
            ],
            options={
                'db_table': 'playground_webhookdelivery',
                'ordering': ['-created_at'],
                'indexes': [models.Index(fields=['endpoint', '-created_at'], name='playground__endpoin_57638a_idx'), models.Index(condition=models.Q(('status', 'pending')), fields=['next_attempt_at'], name='webhook_delivery_pending_due')],
            },
        ),
        ]),
        move_content_types('playground', 'webhooks', ['WebhookEndpoint', 'WebhookDelivery']),
    ]
