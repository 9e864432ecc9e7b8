"""The live logs' rows, written without the template engine (a frame's largest cost once): every
value escaped, absent fields empty, `None` as a template wrote it, the classes the page filters
on, exact times for the jump links."""

from __future__ import annotations

from html.parser import HTMLParser

from dashboard.host.rows import api_rows, event_rows, trace_rows

HOSTILE = "<img src=x onerror=alert(1)>\"'&"


class _Rows(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append({"attrs": dict(attrs), "cells": [], "links": []})
        elif tag == "td":
            self.cell = []
        elif tag == "a":
            self.rows[-1]["links"].append(dict(attrs))
        elif self.cell is not None:
            raise AssertionError(f"markup from a value: <{tag}>")

    def handle_endtag(self, tag):
        if tag == "td":
            self.rows[-1]["cells"].append("".join(self.cell))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def parse(html: str) -> list[dict]:
    parser = _Rows()
    parser.feed(html)
    return parser.rows


def test_trace_rows_escape_every_value_and_keep_exact_times():
    row = {"seq": 7, "time": 0.1 + 0.2, "kind": HOSTILE, "controller": None, "subject": HOSTILE, "detail": HOSTILE}
    (parsed,) = parse(trace_rows([row]))
    assert parsed["attrs"] == {
        "data-kind": HOSTILE,
        "data-controller": "None",
        "data-subject": HOSTILE,
        "data-seq": "7",
        "data-t": "0.30000000000000004",  # exact: the jump goes to this record's moment
    }
    assert parsed["cells"][1:] == [HOSTILE, "None", HOSTILE, HOSTILE]
    jump, why = parsed["links"]
    assert jump["data-jump-seq"] == "7" and jump["data-jump-t"] == "0.30000000000000004"
    assert why["data-why-seq"] == "7"


def test_api_rows_mark_failures_and_name_the_object():
    ok = {
        "seq": 1,
        "time": 2.0,
        "at": 2.5,
        "client": HOSTILE,
        "verb": "get",
        "resource": "pods",
        "namespace": "default",
        "name": "web-1",
        "code": 200,
        "reason": None,
        "latency": 0.5,
    }
    failed = {**ok, "seq": 2, "namespace": "", "name": None, "code": 403, "reason": "Forbidden"}
    first, second = parse(api_rows([ok, failed]))
    assert first["attrs"]["class"] == "" and second["attrs"]["class"] == "failed"
    assert first["cells"][1:5] == [HOSTILE, "get", "pods", "default/web-1"]
    assert second["cells"][4] == "" and second["cells"][5] == "403 Forbidden" and first["cells"][5] == "200"
    assert first["attrs"]["data-t"] == "2.5" and first["links"][0]["data-jump-t"] == "2.5"
    # No tooltip travels with a row: the page writes it on the first hover (live.js rowTip).
    assert all("title" not in link for row in (first, second) for link in row["links"])


def test_event_rows_mark_warnings_and_leave_absent_fields_empty():
    warning = {
        "seq": 3,
        "time": 1.0,
        "type": "Warning",
        "reason": "FailedCreate",
        "object": "ReplicaSet/web",
        "message": HOSTILE,
    }
    normal = {"seq": 4, "time": 1.5, "type": "Normal", "reason": "SuccessfulCreate"}
    first, second = parse(event_rows([warning, normal]))
    assert first["attrs"]["class"] == "warning" and second["attrs"]["class"] == ""
    assert first["cells"][1:] == ["Warning", "FailedCreate", "ReplicaSet/web", HOSTILE, "", ""]
    assert second["cells"][3:] == ["", "", "", ""]


def test_event_rows_carry_the_event_its_count_and_a_spam_filtered_occurrence():
    counted = {
        "seq": 5,
        "time": 2.0,
        "type": "Warning",
        "reason": "FailedCreate",
        "object": "ReplicaSet/default/web",
        "message": "quota",
        "component": "replicaset-controller",
        "name": "web.17a",
        "count": 3,
        "sent": "patch",
    }
    dropped = {**counted, "seq": 6, "count": 26, "sent": "dropped"}
    first, second = parse(event_rows([counted, dropped]))
    assert first["attrs"]["data-event"] == "web.17a" and first["cells"][5] == "3"
    assert first["attrs"]["class"] == "warning" and second["attrs"]["class"] == "warning dropped"
    assert second["cells"][4] == "quota (not sent)" and second["cells"][5] == "26"
