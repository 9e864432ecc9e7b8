"""How far back a watch of one resource may start: kube-apiserver's watch cache window.

kube-apiserver serves a watch from a resourceVersion out of the resource's watch cache
(staging/src/k8s.io/apiserver/pkg/storage/cacher/watch_cache.go), a ring buffer of that
resource's latest events. A watch from a version older than the buffer's oldest event answers
410 Gone, `too old resource version: 1 (N)` (`getAllEventsSinceLocked`), and the client relists.
The simulated server keeps every event in its own history (server.py); `WatchCache` keeps only
which of them upstream's buffer would still hold: their resourceVersions and virtual times.

Guarantees
----------
* One `WatchCache` per resource, fed every committed event of it (`update`) with the virtual
  time of the commit; the buffer sizes itself as `resizeCacheLocked` does: it starts at
  `LOWER_BOUND_CAPACITY` events, doubles (up to `UPPER_BOUND_CAPACITY`) when it is full and its
  oldest event is younger than `EVENT_FRESH_DURATION`, halves (down to the lower bound) when it
  is full and the newest quarter's oldest event is older than that; a full buffer drops its
  oldest event to take the new one (`updateCache`).
* `too_old_below()` is N of upstream's message: the resourceVersion below which a watch is
  refused. The cache is listed when the server starts, at revision 0: until an event has been
  dropped every version is still served (N is 0); after, N is the oldest kept event's version
  minus one.
* Virtual time and the order of commits only: the same run keeps the same window.
"""

from __future__ import annotations

from array import array

# watch_cache.go defaultLowerBoundCapacity / defaultUpperBoundCapacity.
LOWER_BOUND_CAPACITY = 100
UPPER_BOUND_CAPACITY = 100 * 1024
# cacher.go DefaultEventFreshDuration: the bookmark frequency (1 min) plus 15 s.
EVENT_FRESH_DURATION = 75.0


class WatchCache:
    """The window of one resource's watch cache (see the module docstring), kept as upstream's
    ring: the events `start_index` .. `end_index - 1` live at `index % capacity` (16 bytes each, so
    the upper bound costs 1.6 MB, not a Python object per event)."""

    __slots__ = ("_rvs", "_times", "capacity", "end_index", "removed_event_since_relist", "start_index")

    def __init__(self) -> None:
        self.capacity = LOWER_BOUND_CAPACITY
        self._rvs = array("q", bytes(8 * self.capacity))  # resourceVersions
        self._times = array("d", bytes(8 * self.capacity))  # virtual times of the commits
        self.start_index = 0
        self.end_index = 0
        self.removed_event_since_relist = False

    def __len__(self) -> int:
        return self.end_index - self.start_index

    def _full(self) -> bool:
        return self.end_index == self.start_index + self.capacity

    def update(self, rv: int, now: float) -> None:
        """One committed event of the resource, at virtual time `now` (updateCache)."""
        self._resize(now)
        if self._full():
            self.start_index += 1  # the oldest event is dropped
            self.removed_event_since_relist = True
        slot = self.end_index % self.capacity
        self._rvs[slot] = rv
        self._times[slot] = now
        self.end_index += 1

    def _resize(self, now: float) -> None:
        """resizeCacheLocked: grow while the buffer holds only fresh events, shrink when its
        newest quarter is already stale (the quarter keeps it from flapping)."""
        if not self._full():
            return
        capacity = self.capacity
        if now - self._times[self.start_index % capacity] < EVENT_FRESH_DURATION:
            self._do_resize(min(capacity * 2, UPPER_BOUND_CAPACITY))
        elif now - self._times[(self.end_index - capacity // 4) % capacity] > EVENT_FRESH_DURATION:
            self._do_resize(max(capacity // 2, LOWER_BOUND_CAPACITY))

    def _do_resize(self, capacity: int) -> None:
        """doCacheResizeLocked: a shrunk buffer keeps the newest `capacity` events."""
        if capacity == self.capacity:
            return
        if capacity < self.capacity:
            self.start_index = self.end_index - capacity
        rvs, times = array("q", bytes(8 * capacity)), array("d", bytes(8 * capacity))
        for index in range(self.start_index, self.end_index):  # at most UPPER_BOUND_CAPACITY
            rvs[index % capacity] = self._rvs[index % self.capacity]
            times[index % capacity] = self._times[index % self.capacity]
        self._rvs, self._times, self.capacity = rvs, times, capacity

    def too_old_below(self) -> int:
        """The N of `too old resource version: rv (N)`: a watch from a version below it is
        410 Gone (the oldest deliverable event minus one)."""
        if not self.removed_event_since_relist or not len(self):
            return 0
        return self._rvs[self.start_index % self.capacity] - 1
