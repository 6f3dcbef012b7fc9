"""The management-mode controllers of the federation's own objects: the federator (a
project WD's spec flows down to the cells) and the workload controller (a Workload's
placements become WDs). They import the fleet rules and the API, never the projector,
the cells or the operator tools (pyproject.toml layers)."""
