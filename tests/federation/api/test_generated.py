"""Generated artefacts stay in step with the models: config/crd/, the CLI, docs/api.md."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from federation import cli
from federation.api import Annotation, Finalizer, Label, SchedulingGate
from federation.api import reasons as reasons_module
from federation.api.constants import DocumentedStr
from federation.api.crds import ALL_CRDS, CLUSTER_PROFILE_CRD, INSTANCE_CRD, WORKLOAD_DEPLOYMENT_CRD, crd_manifest
from federation.api.docs import COMPAT_NOTES, CompatNote
from federation.api.docs import render as render_docs
from federation.api.render import HEADER, expected_files, render_all, stale_files, write_all

from .conftest import REPO, load_docs

CRD_DIR = REPO / "config" / "crd"
STALE = "config/crd/ is out of date with federation/api: run `task generate` (federation-manager crds --out config/crd)"


def test_checked_in_crds_match_the_models() -> None:
    assert stale_files(CRD_DIR) == [], STALE
    # and nothing else lives there: every file in config/crd/ is generated
    on_disk = sorted(p.relative_to(CRD_DIR).as_posix() for p in CRD_DIR.rglob("*") if p.is_file())
    assert on_disk == sorted(expected_files()), STALE


def test_staleness_check_catches_edits_missing_and_leftover_files(tmp_path: Path) -> None:
    """Guard for the guard: each way config/crd/ can drift from the models is reported."""
    shutil.copytree(CRD_DIR, tmp_path / "crd")
    crd_dir = tmp_path / "crd"
    assert stale_files(crd_dir) == []
    edited = crd_dir / WORKLOAD_DEPLOYMENT_CRD.file_name
    edited.write_text(edited.read_text().replace("updatedReplicas", "currentReplicas"))
    missing = crd_dir / INSTANCE_CRD.file_name
    missing.unlink()
    leftover = crd_dir / "compute" / "compute.datumapis.com_oldthings.yaml"
    leftover.write_text(HEADER + "---\n{}\n")
    (crd_dir / "notes.yaml").write_text("hand-written, not ours\n")
    assert stale_files(crd_dir) == sorted(
        [WORKLOAD_DEPLOYMENT_CRD.file_name, INSTANCE_CRD.file_name, "compute/compute.datumapis.com_oldthings.yaml"]
    )


def test_cli_prints_every_crd(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["crds"]) == 0
    out = capsys.readouterr().out
    assert out == render_all()
    names = [d["metadata"]["name"] for d in load_docs(out)]
    assert names == [c.name for c in ALL_CRDS]
    assert {d["kind"] for d in load_docs(out)} == {"CustomResourceDefinition"}


def test_cli_out_writes_one_file_per_crd(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stale = tmp_path / "compute" / "compute.datumapis.com_oldthings.yaml"
    stale.parent.mkdir(parents=True)
    stale.write_text(HEADER + "---\n{}\n")
    foreign = tmp_path / "handwritten.yaml"
    foreign.write_text("kind: Something\n")
    assert cli.main(["crds", "--out", str(tmp_path)]) == 0
    written = {p.relative_to(tmp_path).as_posix(): p.read_text() for p in tmp_path.rglob("*.yaml")}
    assert not stale.exists(), "a generated file that is no longer generated must go"
    assert written.pop("handwritten.yaml") == "kind: Something\n", "files we did not generate are left alone"
    assert written == expected_files()
    crd_files = [name for name in written if not name.endswith("kustomization.yaml")]
    assert len(crd_files) == len(ALL_CRDS)
    for name in crd_files:
        assert len(load_docs(written[name])) == 1
    assert capsys.readouterr().out.count("\n") == len(written)


def test_write_all_is_idempotent(tmp_path: Path) -> None:
    write_all(tmp_path)
    first = {p: p.read_text() for p in tmp_path.rglob("*") if p.is_file()}
    write_all(tmp_path)
    assert {p: p.read_text() for p in tmp_path.rglob("*") if p.is_file()} == first
    assert stale_files(tmp_path) == []


def test_docs_page_is_generated_from_the_models() -> None:
    assert (REPO / "docs" / "api.md").read_text() == render_docs(), (
        "docs/api.md is out of date with federation/api: run `task generate`"
    )


def _all_documented() -> list[DocumentedStr]:
    members: list[DocumentedStr] = [*Label, *Annotation, *Finalizer, *SchedulingGate]
    for value in vars(reasons_module).values():
        if isinstance(value, type) and issubclass(value, DocumentedStr) and value is not DocumentedStr:
            members.extend(value)
    return members


def test_docs_list_every_key_condition_and_reason_with_a_meaning() -> None:
    page = render_docs()
    for member in _all_documented():
        assert member.meaning, f"{type(member).__name__}.{member.name} has no meaning"
        assert f"{member.value}" in page
        assert member.meaning.replace("|", "\\|") in page


def _paths(schema: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    node = schema
    while node.get("type") == "array":
        node = node["items"]
        prefix += "[]"
    for name, child in (node.get("properties") or {}).items():
        path = f"{prefix}.{name}" if prefix else name
        out.append(path)
        out.extend(_paths(child, path))
    return out


@pytest.mark.parametrize("crd", [INSTANCE_CRD, WORKLOAD_DEPLOYMENT_CRD, CLUSTER_PROFILE_CRD], ids=lambda c: c.kind)
def test_docs_list_every_field(crd: Any) -> None:
    page = render_docs()
    schema = crd_manifest(crd)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for key in ("spec", "status"):
        for path in _paths(schema["properties"][key], key):
            if ".template.spec." in path or "conditions[]." in path:
                continue  # documented once, under Instance spec and Condition
            assert f"`{path}`" in page, path


def _served(schema: dict[str, Any], path: str) -> bool:
    node = schema
    for part in path.split("."):
        while node.get("type") == "array":
            node = node["items"]
        props = node.get("properties") or {}
        if part not in props:
            return False
        node = props[part]
    return True


@pytest.mark.parametrize("note", COMPAT_NOTES, ids=lambda n: f"{n.kind}.{n.path}")
def test_compatibility_notes_say_truly_what_is_served(note: CompatNote) -> None:
    """Each row of docs/api.md's compatibility table names a field the CRD serves, or one
    it prunes, exactly as the generated schema has it."""
    (crd,) = [c for c in ALL_CRDS if c.kind == note.kind]
    schema = crd_manifest(crd)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert _served(schema, note.path) is note.served
