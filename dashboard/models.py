"""Which simulations are running, and where (so any process can list them); and every session's
recording, kept until deleted (docs/time-travel.md)."""

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


class Recording(models.Model):
    """A session as its recording (docs/time-travel.md): how it started (`start`: the JSON of
    `Simulation.start_data()`), every action applied since (`RecordedAction`, by `seq`), the
    virtual time it had reached and the file's timeline actions still pending then. Replayed,
    that is the whole world again: nothing else is stored.

    JSON is kept as text, not in a JSONField: PostgreSQL's jsonb reorders keys and would change
    the bytes of a report replayed from it."""

    RUNNING = "running"
    STOPPED = "stopped"
    DAMAGED = "damaged"  # cannot be replayed (a row not JSON, an action missing ...): `note` says what

    id = models.CharField(primary_key=True, max_length=64)
    name = models.CharField(max_length=200)
    source = models.CharField(max_length=100)
    seed = models.BigIntegerField()
    start = models.TextField()
    state = models.CharField(max_length=16, default=RUNNING)  # running (restored after a crash) | stopped | damaged
    host = models.CharField(max_length=32)  # the process that records it now
    virtual_time = models.FloatField(default=0.0)  # the last time saved
    pending = models.TextField(default="[]")  # JSON: indexes of start's timeline not applied at virtual_time
    actions = models.IntegerField(default=0)  # RecordedAction rows
    # "restored after a restart at t=…; replayed N actions"; of a damaged one, what is wrong
    note = models.CharField(max_length=300, blank=True)
    # A fork (docs/time-travel.md#fork-from-here): the session it was forked from and the time T
    # its history was cut at; its own future starts there. Empty / None for any other session.
    parent = models.CharField(max_length=64, blank=True, default="")
    forked_at = models.FloatField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    stopped = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created"]


class RecordedAction(models.Model):
    """One entry of a session's action log (`Simulation.actions`), appended as it is applied."""

    recording = models.ForeignKey(Recording, on_delete=models.CASCADE, related_name="entries")
    seq = models.IntegerField()  # 0, 1, 2 … in the order the actions were applied
    time = models.FloatField()
    source = models.CharField(max_length=100)
    ok = models.BooleanField()
    entry = models.TextField()  # JSON of the whole log entry: time, action, result, source

    class Meta:
        ordering = ["recording", "seq"]
        constraints = [models.UniqueConstraint(fields=["recording", "seq"], name="one_entry_per_seq")]
