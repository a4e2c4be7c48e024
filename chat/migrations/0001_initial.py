"""Chat (squashed). On PostgreSQL, a full-text index of message bodies:
chat.selectors.message_search matches its expression exactly, so the planner uses it."""

import django.db.models.deletion
from django.conf import settings
from core.migrations_ops import postgresql_sql

from django.db import migrations, models

FULL_TEXT_INDEX = ("CREATE INDEX IF NOT EXISTS chat_message_body_fts ON chat_message"
                   " USING gin (to_tsvector('english', body))")


class Migration(migrations.Migration):

    initial = True

    # The migrations this one squashes (it has the first one's name): a database that
    # applied them all sees it as applied.
    replaces = [
        ('chat', '0002_inbox_undelivered_index'),
        ('chat', '0003_edit_delete_unread'),
    ]

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ChatProfile',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('inbox_seq', models.BigIntegerField(default=0)),
                ('last_seen_at', models.DateTimeField(blank=True, null=True)),
                ('user', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='chat_profile', to=settings.AUTH_USER_MODEL)),
            ],
        ),
        migrations.CreateModel(
            name='Conversation',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('last_seq', models.BigIntegerField(default=0)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('last_message_at', models.DateTimeField(blank=True, null=True)),
                ('user_high', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('user_low', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
        ),
        migrations.CreateModel(
            name='Message',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('seq', models.BigIntegerField()),
                ('client_msg_id', models.CharField(max_length=64)),
                ('body', models.TextField()),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('edited_at', models.DateTimeField(blank=True, null=True)),
                ('deleted_at', models.DateTimeField(blank=True, null=True)),
                ('version', models.IntegerField(db_default=0, default=0)),
                ('conversation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='messages', to='chat.conversation')),
                ('sender', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
        ),
        migrations.CreateModel(
            name='InboxEntry',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('seq', models.BigIntegerField()),
                ('inbox_seq', models.BigIntegerField()),
                ('delivered_at', models.DateTimeField(blank=True, null=True)),
                ('read_at', models.DateTimeField(blank=True, null=True)),
                ('kind', models.CharField(choices=[('message', 'Message'), ('edit', 'Edit'), ('delete', 'Delete')], db_default='message', default='message', max_length=8)),
                ('conversation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='chat.conversation')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('message', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='inbox_entries', to='chat.message')),
            ],
        ),
        migrations.CreateModel(
            name='Block',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('blocked', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('blocker', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('blocker', 'blocked'), name='chat_block_unique'), models.CheckConstraint(condition=models.Q(('blocker', models.F('blocked')), _negated=True), name='chat_block_not_self')],
            },
        ),
        migrations.AddConstraint(
            model_name='conversation',
            constraint=models.UniqueConstraint(fields=('user_low', 'user_high'), name='chat_one_conversation_per_pair'),
        ),
        migrations.AddConstraint(
            model_name='conversation',
            constraint=models.CheckConstraint(condition=models.Q(('user_low__lt', models.F('user_high'))), name='chat_pair_ordered'),
        ),
        migrations.AddConstraint(
            model_name='message',
            constraint=models.UniqueConstraint(fields=('conversation', 'seq'), name='chat_message_seq_unique'),
        ),
        migrations.AddConstraint(
            model_name='message',
            constraint=models.UniqueConstraint(fields=('sender', 'client_msg_id'), name='chat_client_msg_id_unique'),
        ),
        migrations.AddIndex(
            model_name='inboxentry',
            index=models.Index(fields=['user', 'conversation', 'seq'], name='chat_inbox_conv_seq'),
        ),
        migrations.AddIndex(
            model_name='inboxentry',
            index=models.Index(condition=models.Q(('delivered_at__isnull', True)), fields=['user', 'inbox_seq'], name='chat_inbox_undelivered'),
        ),
        migrations.AddIndex(
            model_name='inboxentry',
            index=models.Index(condition=models.Q(('kind', 'message'), ('read_at__isnull', True)), fields=['user', 'conversation'], name='chat_inbox_unread'),
        ),
        migrations.AddConstraint(
            model_name='inboxentry',
            constraint=models.UniqueConstraint(fields=('user', 'inbox_seq'), name='chat_inbox_seq_unique'),
        ),
        migrations.AddConstraint(
            model_name='inboxentry',
            constraint=models.UniqueConstraint(condition=models.Q(('kind', 'message')), fields=('user', 'message'), name='chat_inbox_message_unique'),
        ),
        postgresql_sql(FULL_TEXT_INDEX, "DROP INDEX IF EXISTS chat_message_body_fts"),
    ]
