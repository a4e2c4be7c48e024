# A version's branch name (playground.branches); existing versions are on main.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('playground', '0004_label_reviews'),
    ]

    operations = [
        migrations.AddField(
            model_name='promptversion',
            name='branch',
            field=models.CharField(default='main', max_length=63),
        ),
    ]
