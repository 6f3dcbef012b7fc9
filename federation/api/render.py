"""CRDs as YAML: what `federation-manager crds` prints and `task generate` writes to
config/crd/. Output is deterministic (sorted keys, no line wrapping) so the checked-in
files can be compared byte for byte with a fresh rendering."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .crds import ALL_CRDS, CRDDefinition, crd_manifest

HEADER = "# Generated from federation/api by `federation-manager crds` (task generate). Do not edit.\n"


class _Dumper(yaml.SafeDumper):
    """SafeDumper that indents list items under their key, as kubectl and controller-gen do."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def to_yaml(obj: Any) -> str:
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=1 << 16, allow_unicode=True)


def render_crd(crd: CRDDefinition) -> str:
    """One CRD file: header, document start, manifest."""
    return HEADER + "---\n" + to_yaml(crd_manifest(crd))


def render_all() -> str:
    """Every CRD as one multi-document YAML stream."""
    return HEADER + "".join("---\n" + to_yaml(crd_manifest(c)) for c in ALL_CRDS)


def _kustomization(resources: list[str]) -> str:
    doc = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": resources}
    return HEADER + to_yaml(doc)


def expected_files() -> dict[str, str]:
    """Relative path -> content of everything under config/crd/: one file per CRD, a
    kustomization per bundle, and a top-level kustomization over all bundles."""
    files: dict[str, str] = {}
    bundles: dict[str, list[str]] = {}
    for crd in ALL_CRDS:
        files[crd.file_name] = render_crd(crd)
        bundles.setdefault(crd.bundle, []).append(crd.file_name.split("/", 1)[1])
    for bundle, names in bundles.items():
        files[f"{bundle}/kustomization.yaml"] = _kustomization(names)
    files["kustomization.yaml"] = _kustomization(list(bundles))
    return files


def stale_files(out_dir: Path) -> list[str]:
    """Paths under `out_dir` that differ from a fresh rendering: changed, missing, or
    generated earlier but no longer produced. Empty when config/crd/ is up to date."""
    expected = expected_files()
    on_disk = {p.relative_to(out_dir).as_posix(): p for p in out_dir.rglob("*.yaml")} if out_dir.is_dir() else {}
    stale = [name for name, content in expected.items() if name not in on_disk or on_disk[name].read_text() != content]
    stale += [name for name, path in on_disk.items() if name not in expected and path.read_text().startswith(HEADER)]
    return sorted(stale)


def write_all(out_dir: Path) -> list[Path]:
    """Write config/crd/ (creating directories); returns the paths written.

    Generated files that are no longer expected (a CRD renamed or moved) are removed, so
    the directory never serves a stale CRD; only files carrying our header are touched."""
    expected = expected_files()
    for stale in sorted(out_dir.rglob("*.yaml")) if out_dir.is_dir() else []:
        rel = stale.relative_to(out_dir).as_posix()
        if rel not in expected and stale.read_text().startswith(HEADER):
            stale.unlink()
    written = []
    for name, content in expected.items():
        path = out_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        written.append(path)
    return written
