"""The fleet rules: what holds across the planes (placement, the downstream objects and
their identity, the status aggregate, the Instance projection, the registered cells and
projects, where a cell event routes upstream). Imported by the management controllers, the
projector and the operator tools alike; imports nothing of theirs (pyproject.toml layers)."""
