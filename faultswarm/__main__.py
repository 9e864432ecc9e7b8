"""`python -m faultswarm` = `python -m controlplane swarm`."""

from faultswarm.cli import main

raise SystemExit(main())
