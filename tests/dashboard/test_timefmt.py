"""The one time format of the dashboard (issue #19 §2): readable at seconds and at days."""

from __future__ import annotations

import math

import pytest

from controlplane.session.timefmt import vtime
from dashboard.templatetags.ctrlscope import clock, secs


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0.000 s"),
        (0.005, "0.005 s"),
        (42.105, "42.105 s"),
        (59.9996, "1:00.000"),  # rounded before it is split: never 0:60.000
        (184.567, "3:04.567"),
        (1000.5, "16:40.500"),
        (3784.567, "1:03:04.567"),
        (183845.678, "2d 03:04:05.678"),
        (2_592_000, "30d 00:00:00.000"),
        (-1.5, "-1.500 s"),
    ],
)
def test_vtime_reads_at_seconds_minutes_hours_and_days(seconds, text):
    assert vtime(seconds) == text


def test_vtime_with_fewer_places_for_an_axis():
    assert vtime(120, 0) == "2:00"
    assert vtime(0.5, 1) == "0.5 s"
    assert vtime(86400 * 3, 0) == "3d 00:00:00"


def test_the_template_filters_write_the_same_format():
    assert secs(18376048.906) == "212d 16:27:28.906"
    assert clock(18376048.906) == secs(18376048.906)
    assert secs(None) == "—"
    assert secs(math.inf) == "∞"
    assert secs("soon") == "soon"
