from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('playground', '0017_merge_0015_version_tools_0016_dataset_sharing'),
    ]

    operations = [
        migrations.AddField(
            model_name='datasetimport',
            name='lease_owner',
            field=models.CharField(blank=True, default='', max_length=64),
        ),
        migrations.AddField(
            model_name='datasetimport',
            name='lease_until',
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
