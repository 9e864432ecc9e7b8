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

from collections import deque

# watch_cache.go defaultLowerBoundCapacity / defaultUpperBoundCapacity.
LOWER_BOUND_CAPACITY = 100
UPPER_BOUND_CAPACITY = 100 * 1024
# cacher.go DefaultEventFreshDuration: the bookmark frequency (1 min) plus 15 s.
EVENT_FRESH_DURATION = 75.0


class WatchCache:
    """The window of one resource's watch cache (see the module docstring)."""

    __slots__ = ("_rvs", "_times", "capacity", "removed_event_since_relist")

    def __init__(self) -> None:
        self.capacity = LOWER_BOUND_CAPACITY
        # The resourceVersions and commit times of the events the buffer holds, oldest first;
        # never more than `capacity` of them.
        self._rvs: deque[int] = deque()
        self._times: deque[float] = deque()
        self.removed_event_since_relist = False

    def __len__(self) -> int:
        return len(self._rvs)

    def update(self, rv: int, now: float) -> None:
        """One committed event of the resource, at virtual time `now` (updateCache)."""
        self._resize(now)
        if len(self._rvs) >= self.capacity:
            self._rvs.popleft()
            self._times.popleft()
            self.removed_event_since_relist = True
        self._rvs.append(rv)
        self._times.append(now)

    def _resize(self, now: float) -> None:
        """resizeCacheLocked: grow while the buffer holds only fresh events, shrink when its
        newest quarter is already stale (the quarter keeps it from flapping)."""
        size = len(self._rvs)
        if size < self.capacity:
            return
        if now - self._times[0] < EVENT_FRESH_DURATION:
            self.capacity = min(self.capacity * 2, UPPER_BOUND_CAPACITY)
        elif now - self._times[size - self.capacity // 4] > EVENT_FRESH_DURATION:
            capacity = max(self.capacity // 2, LOWER_BOUND_CAPACITY)
            # doCacheResizeLocked keeps the newest `capacity` events.
            for _ in range(size - capacity):
                self._rvs.popleft()
                self._times.popleft()
            self.capacity = capacity

    def too_old_below(self) -> int:
        """The N of `too old resource version: rv (N)`: a watch from a version below it is
        410 Gone (the oldest deliverable event minus one)."""
        if not self.removed_event_since_relist or not self._rvs:
            return 0
        return self._rvs[0] - 1
