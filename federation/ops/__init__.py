"""The operator tools: one read-only live read of a whole federation (`snapshot`), the
invariant checker, and the `status`, `plan` and `check` commands over it. They import the
fleet rules and the API, never a controller (pyproject.toml layers)."""
