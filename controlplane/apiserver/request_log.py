"""The API server's request log: one line per handled request (the report's `apiCalls`).

Guarantees
----------
* `RequestLog` is a read-only sequence of `RequestRecord`s in handle order: `len(log)`,
  `log[i]` (negative indexes and slices too), iteration, and `==` against another log or a list
  of records / dicts.
* A `RequestRecord` reads like the dict it prints as (`record["code"]`, `dict(record)`,
  `record == {...}`) and is a *view* of its line: it sees later changes (the server fills in
  `code`, and `name` for generateName, once the request is answered).
* Memory: a line costs ~22 bytes, in columns (arrays of times, codes and indexes into a table of
  the distinct (client, verb, resource, namespace) combinations, and a list of names shared with
  the objects) with nothing for Python's GC to traverse. A record object per line cost ~120
  bytes and one more tracked object, and a long run logs hundreds of thousands of requests.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from typing import Any, overload

REQUEST_FIELDS = ("time", "client", "verb", "resource", "namespace", "name", "code")

_NO_CODE = 0  # the `code` column before the request is answered (no HTTP status is 0)
# The fields a line stores as an index into the log's table of their distinct combinations.
_KIND_FIELDS = ("client", "verb", "resource", "namespace")

Kind = tuple[str, str, str, str | None]


class RequestRecord:
    """One line of a `RequestLog`, readable (and writable, for the server) like a dict."""

    __slots__ = ("_index", "_log")

    def __init__(self, log: RequestLog, index: int) -> None:
        self._log = log
        self._index = index

    def __getitem__(self, key: str) -> Any:
        return self._log._read(key, self._index)

    def __setitem__(self, key: str, value: Any) -> None:
        self._log._write(key, self._index, value)

    def get(self, key: str, default: Any = None) -> Any:
        return self._log._read(key, self._index) if key in REQUEST_FIELDS else default

    def keys(self) -> tuple[str, ...]:
        return REQUEST_FIELDS

    def __iter__(self) -> Iterator[str]:
        return iter(REQUEST_FIELDS)

    def __len__(self) -> int:
        return len(REQUEST_FIELDS)

    def to_dict(self) -> dict[str, Any]:
        return {key: self._log._read(key, self._index) for key in REQUEST_FIELDS}

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RequestRecord):
            return self.to_dict() == other.to_dict()
        if isinstance(other, dict):
            return self.to_dict() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.to_dict())


class RequestLog(Sequence[RequestRecord]):
    """The request log, stored by column (see the module docstring)."""

    __slots__ = ("_codes", "_kind_index", "_kinds", "_line_kinds", "_names", "_times")

    def __init__(self) -> None:
        self._times = array("d")
        self._line_kinds = array("I")  # index into _kinds
        self._names: list[str | None] = []
        self._codes = array("H")
        self._kinds: list[Kind] = []
        self._kind_index: dict[Kind, int] = {}

    def append(
        self, time: float, client: str, verb: str, resource: str, namespace: str | None, name: str | None
    ) -> RequestRecord:
        """Log a request not answered yet (`code` None); returns its record."""
        index = len(self._times)
        self._times.append(time)
        kind = (client, verb, resource, namespace)
        number = self._kind_index.get(kind)
        self._line_kinds.append(self._kind(kind) if number is None else number)
        self._names.append(name)
        self._codes.append(_NO_CODE)
        return RequestRecord(self, index)

    def _kind(self, kind: Kind) -> int:
        number = self._kind_index.get(kind)
        if number is None:
            number = self._kind_index[kind] = len(self._kinds)
            self._kinds.append(kind)
        return number

    def _read(self, key: str, index: int) -> Any:
        if key == "time":
            return self._times[index]
        if key == "name":
            return self._names[index]
        if key == "code":
            code = self._codes[index]
            return None if code == _NO_CODE else code
        if key in _KIND_FIELDS:
            return self._kinds[self._line_kinds[index]][_KIND_FIELDS.index(key)]
        raise KeyError(key)

    def _write(self, key: str, index: int, value: Any) -> None:
        if key == "code":
            self._codes[index] = _NO_CODE if value is None else value
        elif key == "time":
            self._times[index] = value
        elif key == "name":
            self._names[index] = value
        elif key in _KIND_FIELDS:
            client, verb, resource, namespace = self._kinds[self._line_kinds[index]]
            changed = {"client": client, "verb": verb, "resource": resource, "namespace": namespace, key: value}
            kind = (changed["client"], changed["verb"], changed["resource"], changed["namespace"])
            self._line_kinds[index] = self._kind(kind)
        else:
            raise KeyError(key)

    def __len__(self) -> int:
        return len(self._times)

    @overload
    def __getitem__(self, index: int) -> RequestRecord: ...

    @overload
    def __getitem__(self, index: slice) -> list[RequestRecord]: ...

    def __getitem__(self, index: int | slice) -> RequestRecord | list[RequestRecord]:
        size = len(self)
        if isinstance(index, slice):
            return [RequestRecord(self, i) for i in range(*index.indices(size))]
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("request log index out of range")
        return RequestRecord(self, index)

    def __iter__(self) -> Iterator[RequestRecord]:
        for index in range(len(self)):
            yield RequestRecord(self, index)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RequestLog | list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RequestLog({[record.to_dict() for record in self]!r})"
