from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0002_recording"),
    ]

    operations = [
        migrations.AddField(
            model_name="recording",
            name="parent",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.AddField(
            model_name="recording",
            name="forked_at",
            field=models.FloatField(blank=True, null=True),
        ),
    ]
