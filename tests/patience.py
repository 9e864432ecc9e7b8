"""How long a test waits for a state before it takes the state to be missing.

The suite must pass on a machine busy with other work: at load 10-17 on two cores a 1,000-pod run
to t=90 took over a minute, a server holding such worlds took more than 10 s to stop, and the first
look at the past more than 30 s. Every wait in the suite is for a state (a server answering, a
process ending, a page showing a value), so a generous bound costs nothing when the state comes; it
only decides how long a real failure takes to be reported. Nothing here is a speed target: those
live in bench/.
"""

PATIENCE_S = 240.0
PATIENCE_MS = int(PATIENCE_S * 1000)
