"""The one table: which simulations are running, and where (so any process can list them)."""

from __future__ import annotations

from datetime import timedelta

from django.db import models
from django.utils import timezone

ALIVE_FOR = timedelta(seconds=20)  # a host writes a heartbeat every 5 s


class SimulationRecord(models.Model):
    id = models.CharField(primary_key=True, max_length=64)
    name = models.CharField(max_length=200)
    source = models.CharField(max_length=100)  # the library id, or "upload"
    seed = models.BigIntegerField()
    host = models.CharField(max_length=32)  # the hosting process
    created = models.DateTimeField(auto_now_add=True)
    heartbeat = models.DateTimeField()
    virtual_time = models.FloatField(default=0.0)
    mode = models.CharField(max_length=16, default="paused")
    pods = models.IntegerField(default=0)

    class Meta:
        ordering = ["created"]

    @classmethod
    def alive(cls) -> models.QuerySet[SimulationRecord]:
        return cls.objects.filter(heartbeat__gte=timezone.now() - ALIVE_FOR)
