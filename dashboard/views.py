"""Pages. For now the home page says what ctrlscope is and lists the shipped scenario library; the
live dashboard is its own piece of work."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from controlplane.scenario import library


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/home.html", {"scenarios": library()})
