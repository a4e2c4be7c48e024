# Multi-turn versions (messages between the system text and the body), scratch drafts and their runs.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('playground', '0002_playground_runs'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ScratchDraft',
            fields=[
                ('user', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='+', serialize=False, to=settings.AUTH_USER_MODEL)),
                ('state', models.JSONField(default=dict)),
                ('updated_at', models.DateTimeField(auto_now=True)),
            ],
        ),
        migrations.AddField(
            model_name='promptversion',
            name='tool_choice',
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='promptversion',
            name='seed',
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='promptversion',
            name='messages',
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AlterField(
            model_name='playgroundrun',
            name='prompt',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='runs', to='playground.prompt'),
        ),
        migrations.AddIndex(
            model_name='playgroundrun',
            index=models.Index(condition=models.Q(('prompt__isnull', True)), fields=['user', '-created_at'], name='playground_scratch_runs'),
        ),
    ]
