"""A user's asyncio operator (kopf) inside the simulation: `SimLoop` (loop.py), the in-memory HTTP
door to the API server (transport.py), the determinism shims (shims.py) and `OperatorHost`
(host.py), which a world with a scenario `operators:` key builds (docs/operators.md).

Nothing here is imported by a world without operators; kopf and aiohttp are imported by the host
when an operator starts.
"""
