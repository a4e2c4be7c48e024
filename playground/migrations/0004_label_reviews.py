# A review request's note (why the requester proposes the move).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("playground", "0003_version_messages"),
    ]

    operations = [
        migrations.AddField(
            model_name="pendinglabelmove",
            name="note",
            field=models.CharField(blank=True, default="", max_length=500),
        ),
    ]
