"""Clusters from a directory of kubeconfig files: `<dir>/<cluster-name>[.yaml|.yml|.kubeconfig]`.

The directory is rescanned every `poll_interval` seconds (it is external state with no
change feed to watch); a new file engages a cluster, a changed file re-engages it with
the new credentials, a removed file disengages it. With `subdir_label`, files in a
subdirectory get that label set to the subdirectory's name (`cell/paris.yaml` →
`<subdir_label>=cell`). More labels come from an optional sidecar next to the kubeconfig,
`<cluster>.labels.yaml`, a YAML mapping of label keys to values (a cell's city code, say);
changing it re-labels the cluster. A broken file is reported once per content and skipped."""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc
import yaml

from ..connection import from_kubeconfig_bytes
from ..errors import ConfigError
from ..selectors import LabelSelector
from .base import ClusterHost

log = logging.getLogger(__name__)

SUFFIXES = (".yaml", ".yml", ".kubeconfig", ".conf")
LABELS_SUFFIX = ".labels.yaml"
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


@dataclass(frozen=True)
class _Entry:
    path: Path
    digest: str
    labels: tuple[tuple[str, str], ...]


def _sidecar_labels(kubeconfig: Path, name: str) -> dict[str, str]:
    """The labels in `<name>.labels.yaml` next to the kubeconfig (none when absent)."""
    sidecar = kubeconfig.with_name(name + LABELS_SUFFIX)
    if not sidecar.is_file():
        return {}
    try:
        data = yaml.safe_load(sidecar.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{sidecar}: cannot read labels: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ConfigError(f"{sidecar}: must be a mapping of label keys to string values")
    try:
        LabelSelector.parse(",".join(f"{k}={v}" for k, v in data.items()))
    except ValueError as exc:
        raise ConfigError(f"{sidecar}: invalid label: {exc}") from exc
    return data


class KubeconfigDirProvider:
    name = "kubeconfig-dir"

    def __init__(self, directory: str | Path, *, poll_interval: float = 2.0, subdir_label: str | None = None) -> None:
        if poll_interval <= 0:
            raise ValueError("poll_interval must be positive")
        self.directory = Path(directory)
        self.poll_interval = poll_interval
        self.subdir_label = subdir_label
        self.engaged: dict[str, _Entry] = {}
        self._rejected: dict[str, str] = {}  # name → digest already reported as broken
        self._synced = False

    @property
    def has_synced(self) -> bool:
        return self._synced

    def _candidates(self) -> dict[str, tuple[Path, tuple[tuple[str, str], ...]]]:
        found: dict[str, tuple[Path, tuple[tuple[str, str], ...]]] = {}
        if not self.directory.is_dir():
            return found
        places: list[tuple[Path, tuple[tuple[str, str], ...]]] = [(self.directory, ())]
        if self.subdir_label:
            places += [
                (sub, ((self.subdir_label, sub.name),))
                for sub in sorted(self.directory.iterdir())
                if sub.is_dir() and not sub.name.startswith(".")
            ]
        for folder, labels in places:
            for path in sorted(folder.iterdir()):
                if not path.is_file() or path.name.startswith(".") or path.name.endswith(LABELS_SUFFIX):
                    continue
                name = path.name
                for suffix in SUFFIXES:
                    if name.endswith(suffix):
                        name = name[: -len(suffix)]
                        break
                if not _NAME.match(name):
                    log.error("kubeconfig dir: %s: %r is not a valid cluster name; skipped", path, name)
                    continue
                if name in found:
                    log.error(
                        "kubeconfig dir: %s and %s both name cluster %r; using the first", found[name][0], path, name
                    )
                    continue
                found[name] = (path, labels)
        return found

    async def scan(self, host: ClusterHost) -> None:
        """One pass: engage new or changed files, disengage removed ones."""
        seen: set[str] = set()
        for name, (path, labels) in self._candidates().items():
            try:
                data = path.read_bytes()
            except OSError as exc:
                log.error("kubeconfig dir: cannot read %s: %s", path, exc)
                continue
            seen.add(name)
            try:
                extra = _sidecar_labels(path, name)
            except ConfigError as exc:
                log.error("kubeconfig dir: cluster %s not engaged: %s", name, exc)
                continue
            entry = _Entry(path, hashlib.sha256(data).hexdigest(), (*labels, *sorted(extra.items())))
            if self.engaged.get(name) == entry or self._rejected.get(name) == entry.digest:
                continue
            try:
                config = await from_kubeconfig_bytes(data, source=f"kubeconfig {path}")
                await host.engage(name, config, dict(entry.labels))
            except (ConfigError, ValueError) as exc:
                log.error("kubeconfig dir: cluster %s not engaged: %s", name, exc)
                self._rejected[name] = entry.digest
                if name in self.engaged:
                    del self.engaged[name]
                    await host.disengage(name)
                continue
            self._rejected.pop(name, None)
            self.engaged[name] = entry
        for name in list(self.engaged):
            if name not in seen:
                del self.engaged[name]
                await host.disengage(name)
        for name in list(self._rejected):
            if name not in seen:
                del self._rejected[name]

    async def run(
        self, host: ClusterHost, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        if not self.directory.is_dir():
            log.warning("kubeconfig dir %s does not exist (yet); clusters appear when it does", self.directory)
        await self.scan(host)
        self._synced = True
        task_status.started()
        try:
            while True:
                await anyio.sleep(self.poll_interval)
                await self.scan(host)
        finally:
            with anyio.CancelScope(shield=True):
                for name in list(self.engaged):
                    del self.engaged[name]
                    await host.disengage(name)
