"""Structured logs: fields bound for a scope (controller, cluster, namespace, name) ride
on every record logged inside it, including the reconciler's own records, and the
formatters render them as `key=value` text or one JSON object per line."""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson

_fields: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("mcruntime_log_fields", default=None)


@contextmanager
def bound(**fields: Any) -> Iterator[None]:
    """Attach fields to every log record emitted in this scope (task-local)."""
    current = _fields.get()
    token = _fields.set({**current, **fields} if current else dict(fields))
    try:
        yield
    finally:
        _fields.reset(token)


def current_fields() -> dict[str, Any]:
    return dict(_fields.get() or {})


class ContextFieldsFilter(logging.Filter):
    """Copies the bound fields onto each record as `record.fields`."""

    def filter(self, record: logging.LogRecord) -> bool:
        fields = _fields.get()
        existing = getattr(record, "fields", None)
        record.fields = {**(fields or {}), **(existing if isinstance(existing, dict) else {})}
        return True


class KeyValueFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        fields = getattr(record, "fields", None)
        if fields:
            text += " " + " ".join(f"{k}={v}" for k, v in fields.items())
        return text


class JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "ts": self.formatTime(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if fields:
            body.update(fields)
        if record.exc_info:
            body["error"] = self.formatException(record.exc_info)
        return orjson.dumps(body, default=str).decode()


def configure(level: int | str = logging.INFO, *, json: bool = False) -> None:
    """Install the structured handler on the root logger (the CLI calls this once)."""
    handler = logging.StreamHandler()
    handler.addFilter(ContextFieldsFilter())
    handler.setFormatter(JSONFormatter() if json else KeyValueFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
