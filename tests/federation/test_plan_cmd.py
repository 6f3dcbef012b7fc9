"""`federation-manager plan -f WD.yaml`: input checks (each bad input one line, exit 2),
the view over a snapshot (pure, on in-memory federations), and the real command against
a fleet — what it says is then what the federator does when the same WD is applied."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from federation import cli
from federation.api.crds import WORKLOAD_DEPLOYMENT_CRD, crd_manifest
from federation.api.strictfields import strict_decoding_error
from federation.fleet.placement import PlacementError
from federation.ops.planview import Action, InputError, parse_workload_deployment, plan_view, render, summary, to_json
from federation.ops.snapshot import Health
from kubeplane import EmbeddedAPIServer
from kubeplane.testing import Kubectl, kubectl_path
from tests.federation.test_federator import WDs, shares, workload_deployment
from tests.support import Fleet, eventually, fleet
from tests.support.crds import install_crd

from .inspecting import cli as run_cli
from .inspecting import federation
from .worlds import World, standard, uid


def text_of(renderable: Any) -> list[str]:
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(renderable)
    return [line.rstrip() for line in out.getvalue().splitlines()]


def as_yaml(obj: Any) -> str:
    return yaml.safe_dump(obj, sort_keys=False)


GOOD = workload_deployment("api", "DFW", 3)


def edited(**spec: Any) -> dict[str, Any]:
    wd = copy.deepcopy(GOOD)
    wd["spec"].update(spec)
    return wd


# ---------------------------------------------------------------------- input


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [1,", "wd.yaml: not valid YAML: line 1, column 7: expected the node content, but found '<stream end>'"),
        ("a: b\n c: d\n", "wd.yaml: not valid YAML: line 2, column 3: mapping values are not allowed here"),
        ("", "wd.yaml: holds 0 YAML documents; give exactly one WorkloadDeployment"),
        (
            as_yaml(GOOD) + "---\n" + as_yaml(GOOD),
            "wd.yaml: holds 2 YAML documents; give exactly one WorkloadDeployment",
        ),
        ("- 1\n- 2\n", "wd.yaml: not a Kubernetes object (expected a YAML mapping, got list)"),
        (as_yaml({**GOOD, "kind": "Workload"}), "wd.yaml: kind 'Workload' is not a WorkloadDeployment"),
        (
            as_yaml({**GOOD, "apiVersion": "compute.datumapis.com/v1"}),
            "wd.yaml: apiVersion 'compute.datumapis.com/v1': expected compute.datumapis.com/v1alpha",
        ),
        (as_yaml({**GOOD, "metadata": {"namespace": "default"}}), "wd.yaml: metadata.name: required"),
        (as_yaml({k: v for k, v in GOOD.items() if k != "spec"}), "wd.yaml: spec: required to plan a placement"),
        (
            as_yaml(edited(cityCode=None)),
            "wd.yaml: spec: Value error, exactly one of spec.locationRef or spec.cityCode must be set",
        ),
        (as_yaml(edited(replicas=-1)), "wd.yaml: spec.replicas: Input should be greater than or equal to 0"),
        (
            as_yaml(edited(replicas="three", cityCode=7)),
            "wd.yaml: spec.cityCode: Input should be a valid string (and 1 more)",
        ),
    ],
)
def test_bad_input_is_named(text: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_workload_deployment(text, "wd.yaml")
    assert str(caught.value) == message


def test_json_input_and_a_good_wd() -> None:
    assert parse_workload_deployment(json.dumps(GOOD), "wd.json") == GOOD


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        (None, [], "federation-manager plan: -f {dir}/wd.yaml: no such file"),
        ("kind: Pod\n", [], "federation-manager plan: {dir}/wd.yaml: kind 'Pod' is not a WorkloadDeployment"),
        (
            as_yaml(edited(replica=5)),
            [],
            'federation-manager plan: {dir}/wd.yaml: strict decoding error: unknown field "spec.replica"',
        ),
        (
            as_yaml(edited(cityCode="DFW 1")),
            [],
            "federation-manager plan: {dir}/wd.yaml: spec.cityCode: String should match pattern '^\\S+$'",
        ),
        (
            as_yaml(GOOD),
            ["-n", "prod"],
            "federation-manager plan: {dir}/wd.yaml: metadata.namespace 'default' does not match --namespace 'prod'",
        ),
        (as_yaml(GOOD), [], "federation-manager plan: --kubeconfig {dir}/nowhere.kubeconfig: no such file"),
    ],
)
def test_the_command_refuses_bad_input_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, extra: list[str], message: str
) -> None:
    if content is not None:
        (tmp_path / "wd.yaml").write_text(content)
    argv = ["plan", "-f", str(tmp_path / "wd.yaml"), "--kubeconfig", str(tmp_path / "nowhere.kubeconfig"), *extra]
    code, out, err = run_main(argv, capsys)
    assert (code, out) == (2, "")
    assert err == message.format(dir=tmp_path) + "\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["status"], "one of the arguments --state-dir --kubeconfig is required"),
        (
            ["status", "--state-dir", "{dir}", "--kubeconfig", "x"],
            "argument --kubeconfig: not allowed with argument --state-dir",
        ),
        (
            ["status", "--state-dir", "{dir}", "--timeout", "0"],
            "argument --timeout: '0': must be a positive number of seconds",
        ),
        (["check", "--state-dir", "{dir}", "--output", "xml"], "argument -o/--output: invalid choice: 'xml'"),
    ],
)
def test_bad_flags_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, _out, err = run_main([a.format(dir=tmp_path) for a in argv], capsys)
    assert code == 2
    assert message in err.splitlines()[-1]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["status", "--state-dir", "{dir}"],
            "federation-manager status: --state-dir {dir}: management.kubeconfig not "
            "found (is `federation-manager up --state-dir {dir}` running?)",
        ),
        (["check", "--state-dir", "{dir}/nope"], "federation-manager check: --state-dir {dir}/nope: no such directory"),
        (
            ["status", "--state-dir", "{dir}", "--watch", "-o", "json"],
            "federation-manager status: --watch refreshes the table; use --output json without --watch",
        ),
    ],
)
def test_status_and_check_refuse_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run_main([a.format(dir=tmp_path) for a in argv], capsys)
    assert (code, out, err) == (2, "", message.format(dir=tmp_path) + "\n")


def test_an_unreachable_management_cluster_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.processes import free_port

    port = free_port()  # nothing listens there
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }
    (tmp_path / "management.kubeconfig").write_text(as_yaml(kubeconfig))
    code, out, err = run_main(["check", "--state-dir", str(tmp_path), "--timeout", "2"], capsys)
    assert (code, out) == (2, "")
    assert err.startswith(f"federation-manager check: cannot read the management cluster at http://127.0.0.1:{port}: ")
    assert err.count("\n") == 1


# ---------------------------------------------------------------------- the view (pure)


def cells_of(view: Any) -> list[tuple[str, int | None, int | None, str | None, Action]]:
    def now(r: range | None) -> str | None:
        return None if r is None else f"{len(r)}@{r.start}"

    return [(c.cell, c.replicas, c.ordinal_start, now(c.current), c.action) for c in view.cells]


def test_unchanged_and_re_divided() -> None:
    snap = standard().snapshot()
    same = plan_view(snap, "web", GOOD, "default")
    assert cells_of(same) == [("dfw-1", 2, 0, "2@0", Action.KEEP), ("dfw-2", 1, 2, "1@2", Action.KEEP)]
    assert summary(same) == "nothing would change; 2 unchanged"
    more = plan_view(snap, "web", edited(replicas=5), "default")
    # a scale-up only adds (issue 18 item 2): dfw-1 keeps api-0 and api-1, dfw-2 grows
    assert cells_of(more) == [("dfw-1", 2, 0, "2@0", Action.KEEP), ("dfw-2", 3, 2, "1@2", Action.REDIVIDE)]
    assert summary(more) == "would re-divide 1; 1 unchanged"
    assert more.moves == ()
    assert (more.deployed, more.city, more.replicas) == (True, "DFW", 5)


def test_a_joining_cell_prints_the_instances_that_move() -> None:
    w = standard()
    w.add_cell("dfw-3", "DFW")
    view = plan_view(w.snapshot(), "web", GOOD, "default")
    assert view.moves == ("moves api-1 from dfw-1 to dfw-3",)
    assert to_json(view)["moves"] == ["moves api-1 from dfw-1 to dfw-3"]
    assert "moves api-1 from dfw-1 to dfw-3" in [" ".join(line.split()) for line in text_of(render(view))]


def test_a_spec_change_updates_in_place() -> None:
    changed = edited()
    changed["spec"]["template"]["metadata"]["labels"]["v"] = "2"
    view = plan_view(standard().snapshot(), "web", changed, "default")
    assert [c.action for c in view.cells] == [Action.UPDATE, Action.UPDATE]


def test_a_city_change_creates_and_removes() -> None:
    view = plan_view(standard().snapshot(), "web", edited(cityCode="LHR"), "default")
    assert cells_of(view) == [
        ("lhr-1", 3, 0, None, Action.CREATE),
        ("dfw-1", None, None, "2@0", Action.REMOVE),
        ("dfw-2", None, None, "1@2", Action.REMOVE),
    ]
    assert summary(view) == "would create 1, remove 2"
    assert [line.split() for line in text_of(render(view))] == [
        ["WorkloadDeployment", "web/default/api:", "3", "replicas", "in", "city", "LHR", "(deployed)"],
        ["CELL", "REPLICAS", "ORDINALS", "NOW", "ACTION"],
        ["lhr-1", "3", "0-2", "no", "copy", "create"],
        ["dfw-1", "-", "-", "0-1", "remove"],
        ["dfw-2", "-", "-", "2", "remove"],
        ["would", "create", "1,", "remove", "2"],
    ]


def test_a_new_wd_and_a_city_without_cells() -> None:
    snap = standard().snapshot()
    new = plan_view(snap, "web", workload_deployment("fresh", "DFW", 1), "default")
    assert cells_of(new) == [("dfw-1", 1, 0, None, Action.CREATE), ("dfw-2", 0, 1, None, Action.CREATE)]
    assert new.deployed is False
    nowhere = plan_view(snap, "web", workload_deployment("far", "NRT", 2), "default")
    assert nowhere.cells == ()
    assert summary(nowhere) == (
        "no registered cell serves city NRT: nothing would be placed (Available=False/NoMatchingLocation)"
    )
    assert to_json(nowhere)["cells"] == []


def test_a_copy_left_by_an_earlier_wd_is_replaced() -> None:
    w = standard()
    w.projects["web"].wd("default", "api")["metadata"]["uid"] = uid("wd")  # deleted and created again
    view = plan_view(w.snapshot(), "web", GOOD, "default")
    assert cells_of(view) == [("dfw-1", 2, 0, "2@0", Action.REPLACE), ("dfw-2", 1, 2, "1@2", Action.REPLACE)]


def test_an_unreachable_cell_is_unknown_but_keeps_its_share() -> None:
    w = standard()
    w.cells["dfw-2"].health = Health(False, "connection refused")
    view = plan_view(w.snapshot(), "web", GOOD, "default")
    assert cells_of(view) == [("dfw-1", 2, 0, "2@0", Action.KEEP), ("dfw-2", 1, 2, None, Action.UNKNOWN)]
    assert view.cells[1].reachable is False
    assert summary(view) == "nothing would change; 1 unchanged; 1 in cells not read"
    assert "dfw-2 (unreachable)" in text_of(render(view))[3]


def test_autoscaled_copies_keep_the_cells_replica_count() -> None:
    w = World()
    w.add_cell("dfw-1", "DFW")
    w.add_project("acme/web")
    scale = {"maxReplicas": 8, "metrics": [{"resource": {"name": "cpu", "target": {"averageUtilization": 50}}}]}
    wd = w.add_wd("web", "api", "DFW", 2, **scale)
    w.converge()
    w.copies_of("web", wd)["dfw-1"]["spec"]["replicas"] = 6  # the cell's autoscaler scaled up
    again = workload_deployment("api", "DFW", 2, **scale)
    view = plan_view(w.snapshot(), "web", again, "default")
    assert cells_of(view) == [("dfw-1", 2, 0, "6@0", Action.KEEP)]
    assert view.autoscaled
    assert to_json(view) == {
        "project": "web",
        "namespace": "default",
        "name": "api",
        "cityCode": "DFW",
        "replicas": 2,
        "autoscaled": True,
        "deployed": True,
        "cells": [
            {
                "cell": "dfw-1",
                "reachable": True,
                "replicas": 2,
                "ordinalStart": 0,
                "current": {"replicas": 6, "ordinalStart": 0},
                "action": "keep",
            }
        ],
        "moves": [],
    }


def test_placement_errors_come_from_placement_itself() -> None:
    with pytest.raises(PlacementError, match=r"spec.cityCode: 'DFW 1' must not contain spaces"):
        plan_view(standard().snapshot(), "web", edited(cityCode="DFW 1"), "default")


def test_a_lower_case_city_code_is_placed_like_the_server_accepts_it() -> None:
    """Issue 18 item 5: `cityCode: dfw` (which the server accepts) places on the DFW cells."""
    view = plan_view(standard().snapshot(), "web", edited(cityCode="dfw"), "default")
    assert cells_of(view) == [("dfw-1", 2, 0, "2@0", Action.UPDATE), ("dfw-2", 1, 2, "1@2", Action.UPDATE)]


# ---------------------------------------------------------------------- the command against a fleet


def copies_now(f: Fleet, name: str) -> dict[str, dict[str, int]]:
    return {cell: {"replicas": n, "ordinalStart": start} for cell, (n, start) in shares(f, name).items()}


async def apply_and_wait(f: Fleet, wd: dict[str, Any], planned: list[dict[str, Any]]) -> None:
    """Apply `wd` to project web and wait until the copies are exactly what `plan` said."""
    current = WDs(f, "web").get("default", wd["metadata"]["name"])
    if current is None:
        WDs(f, "web").create(wd)
    else:
        current["spec"] = wd["spec"]
        WDs(f, "web").update(current)
    want = {
        c["cell"]: {"replicas": c["replicas"], "ordinalStart": c["ordinalStart"]}
        for c in planned
        if c["action"] != "remove"
    }
    await eventually(lambda: copies_now(f, wd["metadata"]["name"]) == want, f"the copies planned: {want}", within=30)


@pytest.mark.slow
async def test_plan_shows_what_the_federator_then_does(tmp_path: Path) -> None:
    mgmt = str(tmp_path / "management.kubeconfig")
    async with federation(tmp_path) as (f, _mgr):
        WDs(f, "web").create(workload_deployment("api", "DFW", 3))
        await eventually(
            lambda: (
                copies_now(f, "api")
                == {"dfw-1": {"replicas": 2, "ordinalStart": 0}, "dfw-2": {"replicas": 1, "ordinalStart": 2}}
            ),
            "2 + 1",
        )
        before = copies_now(f, "api")

        # more replicas: only added, the ordinals each cell holds kept (issue 18 item 2)
        (tmp_path / "wd.yaml").write_text(as_yaml(edited(replicas=5)))
        ran = await run_cli(
            "plan", "-f", str(tmp_path / "wd.yaml"), "--kubeconfig", mgmt, "--project", "web", "-o", "json"
        )
        assert (ran.code, ran.err) == (0, "")
        shown = json.loads(ran.out)
        assert {c["cell"]: c["current"] for c in shown["cells"]} == before, "NOW is what the cells hold"
        assert [(c["cell"], c["replicas"], c["ordinalStart"], c["action"]) for c in shown["cells"]] == [
            ("dfw-1", 2, 0, "keep"),
            ("dfw-2", 3, 2, "re-divide"),
        ]
        assert shown["moves"] == []
        await apply_and_wait(f, edited(replicas=5), shown["cells"])

        # another city: created there, removed here (the table, from stdin)
        moved = edited(replicas=5, cityCode="LHR")
        ran = await run_cli("plan", "-f", "-", "--kubeconfig", mgmt, "--project", "web", stdin=as_yaml(moved))
        assert ran.code == 0, ran.err
        assert [line.split() for line in ran.out.splitlines()] == [
            ["WorkloadDeployment", "web/default/api:", "5", "replicas", "in", "city", "LHR", "(deployed)"],
            ["CELL", "REPLICAS", "ORDINALS", "NOW", "ACTION"],
            ["lhr-1", "5", "0-4", "no", "copy", "create"],
            ["dfw-1", "-", "-", "0-1", "remove"],
            ["dfw-2", "-", "-", "2-4", "remove"],
            ["would", "create", "1,", "remove", "2"],
        ]
        ran = await run_cli(
            "plan", "-f", "-", "--state-dir", str(tmp_path), "--project", "web", "-o", "json", stdin=as_yaml(moved)
        )
        await apply_and_wait(f, moved, json.loads(ran.out)["cells"])

        # two projects are registered: which one must be said
        ran = await run_cli("plan", "-f", str(tmp_path / "wd.yaml"), "--kubeconfig", mgmt)
        assert (ran.code, ran.out) == (2, "")
        assert ran.err == (
            "federation-manager plan: 2 projects are registered (shop, web): choose one with --project\n"
        )
        ran = await run_cli("plan", "-f", str(tmp_path / "wd.yaml"), "--kubeconfig", mgmt, "--project", "nope")
        assert ran.err == (
            f"federation-manager plan: --project nope: not registered in {f.management.url} namespace "
            "federation-system (registered: shop, web)\n"
        )


@pytest.mark.kubectl
async def test_unknown_fields_are_refused_offline_as_the_server_refuses_them(
    apiserver: EmbeddedAPIServer, kubectl: Kubectl, tmp_path: Path
) -> None:
    """Issue 18 item 5: one validation. `plan -f` without a cluster and the API server
    (kubectl's strict field validation) refuse `spec.replica` with the same words."""
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine")
    await install_crd(apiserver, crd_manifest(WORKLOAD_DEPLOYMENT_CRD))
    bad = as_yaml(edited(replica=5))
    served = await kubectl.run("create", "--validate=strict", "-f", "-", stdin=bad)
    assert served.returncode != 0
    offline = strict_decoding_error(yaml.safe_load(bad))
    assert offline == 'strict decoding error: unknown field "spec.replica"'
    assert offline in served.stderr, served.stderr
    good = await kubectl.run(
        "create", "--validate=strict", "--dry-run=server", "-f", "-", stdin=as_yaml(edited(cityCode="dfw"))
    )
    assert good.returncode == 0, good.stderr
    assert strict_decoding_error(yaml.safe_load(as_yaml(edited(cityCode="dfw")))) is None


@pytest.mark.slow
async def test_what_the_server_refuses_plan_refuses_with_the_servers_words(tmp_path: Path) -> None:
    """Issue 18 item 5: with a project reachable, `plan -f` asks its API server (a dry-run
    server-side apply with strict field validation) and refuses what the server refuses —
    here what no offline check can know (addresses set on the deployed WD's interface, which
    a transition rule forbids after creation) and a CEL rule — in one line, storing nothing."""
    mgmt = str(tmp_path / "management.kubeconfig")
    async with fleet(tmp_path, projects=("acme/web",), cells=(("dfw-1", "DFW"),)) as f:
        deployed = WDs(f, "web").create(workload_deployment("api", "DFW", 3))
        addressed = edited()
        addressed["spec"]["template"]["spec"]["networkInterfaces"][0]["addresses"] = [{"class": "public"}]
        ran = await run_cli("plan", "-f", "-", "--kubeconfig", mgmt, stdin=as_yaml(addressed))
        assert (ran.code, ran.out) == (2, ""), ran.err
        assert ran.err.startswith("federation-manager plan: stdin: refused by project web's API server (dry run): ")
        assert "addresses cannot be set" in ran.err and len(ran.err.splitlines()) == 1, ran.err

        everything = edited()
        everything["metadata"]["name"] = "new"
        sandbox = everything["spec"]["template"]["spec"]["runtime"]["sandbox"]
        sandbox["containers"][0]["securityContext"] = {"capabilities": {"add": ["ALL"]}}
        ran = await run_cli("plan", "-f", "-", "--kubeconfig", mgmt, stdin=as_yaml(everything))
        assert ran.code == 2 and "ALL cannot be added" in ran.err, ran.err

        ran = await run_cli("plan", "-f", "-", "--kubeconfig", mgmt, "-o", "json", stdin=as_yaml(edited(replicas=4)))
        assert ran.code == 0, ran.err  # what the server accepts, plan places
        assert [c["replicas"] for c in json.loads(ran.out)["cells"]] == [4]
        stored = WDs(f, "web").get("default", "api")
        assert stored is not None and stored["metadata"]["resourceVersion"] == deployed["metadata"]["resourceVersion"]
        assert WDs(f, "web").get("default", "new") is None, "a dry run stores nothing"
