from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from federation.features import FeatureGateError, FeatureGates
from federation.settings import ManagerSettings, SettingsError, add_arguments, load_settings


def parse(*argv: str) -> ManagerSettings:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return load_settings(parser.parse_args(list(argv)))


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.startswith("FEDERATION_") or key in ("POD_NAMESPACE", "KUBECONFIG"):
            monkeypatch.delenv(key)


def test_defaults_match_the_deploy_manifests() -> None:
    s = parse()
    assert s.metrics_bind_address == ":8080" and s.health_probe_bind_address == ":8081"
    assert not s.leader_elect and not s.enable_management_controllers and not s.enable_cell_controllers
    assert s.feature_gates.as_dict() == {"PodRuntime": False, "QuotaGate": False}
    assert s.effective_provider() == "none"


def test_flags_the_manifests_use() -> None:
    s = parse(
        "--enable-management-controllers",
        "--enable-cell-controllers=false",
        "--feature-gates=PodRuntime=true",
        "--leader-elect",
        "--leader-election-namespace=federation-system",
        "--metrics-bind-address=:9090",
        "--health-probe-bind-address=127.0.0.1:0",
        "--kubeconfig-dir=/clusters",
    )
    assert s.enable_management_controllers and not s.enable_cell_controllers
    assert s.feature_gates.enabled("PodRuntime") and not s.feature_gates.enabled("QuotaGate")
    assert s.leader_elect and s.leader_election_namespace == "federation-system"
    assert s.metrics_bind_address == ":9090"
    assert s.effective_provider() == "kubeconfig-dir"


def test_precedence_flags_over_environment_over_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "registration:\n  namespace: from-file\n  kubeconfigDir: ''\ncontrollers:\n  workers: 3\n"
        "featureGates:\n  QuotaGate: true\nleaderElect: true\n"
    )
    s = parse(f"--config={config}")
    assert s.registration.namespace == "from-file" and s.controllers.workers == 3 and s.leader_elect
    assert s.feature_gates.enabled("QuotaGate") and s.registration.kubeconfig_dir is None
    monkeypatch.setenv("FEDERATION_REGISTRATION__NAMESPACE", "from-env")
    monkeypatch.setenv("FEDERATION_FEATURE_GATES", "QuotaGate=false")
    monkeypatch.setenv("FEDERATION_CITY_CODE", "DFW")
    s = parse(f"--config={config}")
    assert s.registration.namespace == "from-env" and not s.feature_gates.enabled("QuotaGate")
    assert s.city_code == "DFW"
    s = parse(f"--config={config}", "--registration-namespace=from-flag", "--leader-elect=false", "--workers=5")
    assert s.registration.namespace == "from-flag" and not s.leader_elect and s.controllers.workers == 5


def test_the_shipped_config_file_loads() -> None:
    shipped = Path(__file__).parents[2] / "config" / "manager" / "config.yaml"
    assert shipped.is_file(), "the manager's config file ships in config/manager/"
    s = parse(f"--config={shipped}")
    assert s.controllers.workers >= 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--feature-gates=Foo=true"],
            "--feature-gates: unknown feature gate 'Foo'; known gates: PodRuntime, QuotaGate",
        ),
        (["--feature-gates=QuotaGate=maybe"], "--feature-gates: invalid value 'maybe' for feature gate 'QuotaGate'"),
        (["--feature-gates=QuotaGate"], "expected Name=true or Name=false"),
        (["--metrics-bind-address=localhost"], "--metrics-bind-address: bind address 'localhost'"),
        (["--health-probe-bind-address=:99999"], "port 99999 is out of range"),
        (["--workers=0"], "--workers: Input should be greater than or equal to 1"),
        (["--leader-elect=perhaps"], "--leader-elect: Input should be a valid boolean"),
        (["--cluster-provider=kubeconfig-dir"], "needs --kubeconfig-dir"),
        (["--cluster-provider=carrier-pigeon"], "--cluster-provider: Input should be"),
        (["--cluster-selector=role in cell"], "--cluster-selector: label selector"),
        (["--leader-election-renew-deadline=20"], "lease duration > renew deadline > retry period"),
        (["--sharding"], "--sharding shards the management controllers: it needs --enable-management-controllers"),
        (
            ["--enable-management-controllers", "--sharding", "--shard-id=Shard_A"],
            "--shard-id: 'Shard_A' is not a valid shard name: lower-case letters",
        ),
        (
            ["--enable-management-controllers", "--sharding", "--shard-id=federation-manager"],
            "is the sharder's Lease name (--leader-election-id)",
        ),
    ],
)
def test_bad_settings_name_the_flag(argv: list[str], message: str) -> None:
    with pytest.raises(SettingsError) as err:
        parse(*argv)
    assert message in str(err.value)


def test_bad_config_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("registration:\n  nmespace: x\n")
    with pytest.raises(SettingsError, match=rf"config file {bad}: key registration\.nmespace: unknown setting"):
        parse(f"--config={bad}")
    bad.write_text("workers: 4\nregistration:\n  leaderElect: true\n")
    with pytest.raises(SettingsError) as err:
        parse(f"--config={bad}")
    assert f"config file {bad}: key workers: unknown here; 'workers' belongs under 'controllers:'" in str(err.value)
    assert "key registration.leader_elect: unknown here; 'leader_elect' belongs at the top level" in str(err.value)
    bad.write_text("controllers:\n  workers: 0\n")
    with pytest.raises(SettingsError, match=rf"config file {bad}: key controllers\.workers: Input should be"):
        parse(f"--config={bad}")
    bad.write_text("[a, list]")
    with pytest.raises(SettingsError, match="must hold a mapping"):
        parse(f"--config={bad}")
    with pytest.raises(SettingsError, match="cannot read"):
        parse(f"--config={tmp_path / 'missing.yaml'}")


def test_errors_name_the_environment_variable_the_user_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FEDERATION_CONTROLLERS__WORKERS", "0")
    monkeypatch.setenv("FEDERATION_LEADER_ELECT", "perhaps")
    with pytest.raises(SettingsError) as err:
        parse()
    text = str(err.value)
    assert "environment variable FEDERATION_CONTROLLERS__WORKERS: Input should be greater than or equal to 1" in text
    assert "environment variable FEDERATION_LEADER_ELECT: Input should be a valid boolean" in text
    assert "--workers" not in text, "the user never typed the flag"
    with pytest.raises(SettingsError, match=r"(?m)^--workers: "):
        parse("--workers=0")


def test_sharding_flags_and_their_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = parse("--enable-management-controllers", "--sharding", "--shard-id=shard-a")
    assert settings.sharding and settings.effective_shard_id() == "shard-a"
    monkeypatch.setenv("FEDERATION_SHARDING", "true")
    monkeypatch.setenv("POD_NAME", "federation-manager-7f9c-x2x4")
    from_env = parse("--enable-management-controllers")
    assert from_env.sharding and from_env.effective_shard_id() == "federation-manager-7f9c-x2x4"  # the pod's name
    assert not parse("--enable-management-controllers", "--sharding=false").sharding


def test_feature_gates_api() -> None:
    gates = FeatureGates.coerce({"QuotaGate": "True"})
    assert gates.enabled("QuotaGate") and str(gates) == "QuotaGate=true"
    with pytest.raises(FeatureGateError, match="unknown feature gate 'Nope'"):
        gates.enabled("Nope")
    with pytest.raises(FeatureGateError, match="set twice"):
        FeatureGates.parse("QuotaGate=true,QuotaGate=false")
    assert FeatureGates.parse(" ") == FeatureGates()


def test_the_cli_run_command_reports_bad_settings_and_exits_2() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "federation.cli", "run", "--feature-gates=Bogus=true"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert "--feature-gates: unknown feature gate 'Bogus'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_default_shard_name_that_cannot_be_one_is_refused_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    from federation.app import StartupError, sharding_options

    monkeypatch.setenv("POD_NAME", "Build_Host")
    settings = parse("--enable-management-controllers", "--sharding", "--leader-election-namespace=ops")
    with pytest.raises(StartupError, match=r"--shard-id: the default .Build_Host. .* is not a valid shard name"):
        sharding_options(settings)
    monkeypatch.setenv("POD_NAME", "replica-0")
    options = sharding_options(settings)
    assert options is not None and (options.shard, options.ring, options.lease_namespace) == (
        "replica-0",
        "federation-manager",
        "ops",
    )
    assert sharding_options(parse("--enable-management-controllers")) is None
