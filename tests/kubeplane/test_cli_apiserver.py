"""`federation-manager apiserver` as a user runs it: a process that writes a kubeconfig
kubectl can use, serves until SIGTERM/SIGINT and exits cleanly; bad flags are clear errors."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
from pathlib import Path

import aiohttp
import pytest
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

from kubeplane import EmbeddedAPIServer
from kubeplane.testing import Kubectl, kubectl_path

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _start(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "federation.cli",
        "apiserver",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_apiserver_command_serves_kubectl_and_stops_cleanly(tmp_path: Path, sig: signal.Signals) -> None:
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    port = _free_port()
    kubeconfig = tmp_path / "kc.yaml"
    proc = await _start("--port", str(port), "--kubeconfig", str(kubeconfig), "--name", "site-a")
    try:
        assert proc.stdout is not None
        banner = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        assert f"serving at http://127.0.0.1:{port}" in banner
        kubectl = Kubectl(kubeconfig, tmp_path / "cache")
        assert "site-a" in await kubectl("config", "current-context")
        await kubectl("apply", "-f", "-", stdin="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hello}\n")
        assert (await kubectl("get", "configmap", "hello", "-o", "jsonpath={.metadata.name}")) == "hello"
    finally:
        proc.send_signal(sig)
        code = await asyncio.wait_for(proc.wait(), 20)
    assert code == 0, (await proc.stderr.read()).decode() if proc.stderr else code


async def test_apiserver_command_rejects_a_busy_port(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = await _start("--port", str(port), "--kubeconfig", str(tmp_path / "kc"))
        _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in err.decode()
    assert "Traceback" not in err.decode()


async def test_apiserver_command_requires_its_flags(tmp_path: Path) -> None:
    proc = await _start("--kubeconfig", str(tmp_path / "kc"))
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 2
    assert "--port" in err.decode()


async def test_tls_with_token_works_for_kubectl_and_kubernetes_asyncio(tmp_path: Path) -> None:
    async with EmbeddedAPIServer(kubeconfig=tmp_path / "kc", tls=True) as srv:
        assert srv.url.startswith("https://")
        api_client = await k8s_config.new_client_from_config(config_file=str(tmp_path / "kc"))
        try:
            names = [ns.metadata.name for ns in (await k8s.CoreV1Api(api_client).list_namespace()).items]
            assert "default" in names
        finally:
            await api_client.close()
        # without the bearer token the server answers 401 as a Status
        async with aiohttp.ClientSession() as session, session.get(f"{srv.url}/api/v1/namespaces", ssl=False) as resp:
            assert resp.status == 401
            assert (await resp.json())["reason"] == "Unauthorized"
        if kubectl_path() is not None:
            out = await Kubectl(tmp_path / "kc", tmp_path / "cache")("get", "ns", "default", "-o", "name")
            assert out.strip() == "namespace/default"


async def test_apiserver_command_names_an_unwritable_kubeconfig(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    proc = await _start("--port", "0", "--kubeconfig", str(blocker / "kc.yaml"))
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 1
    assert err.decode().startswith(f"--kubeconfig: cannot write {blocker}"), err.decode()
    assert "Traceback" not in err.decode()


async def test_a_server_that_cannot_write_its_kubeconfig_does_not_keep_running(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    server = EmbeddedAPIServer(kubeconfig=blocker / "kc.yaml")
    with pytest.raises(OSError):
        await server.start()
    assert server.paused, "the half-started server released its port"


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
async def test_apiserver_command_refuses_a_bookmark_interval_that_is_not_positive(tmp_path: Path, value: str) -> None:
    # 0 used to be accepted and turned every bookmark-enabled watch into a busy loop
    proc = await _start("--port", "0", "--kubeconfig", str(tmp_path / "kc"), f"--bookmark-interval={value}")
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 2
    assert f"argument --bookmark-interval: must be a positive number of seconds, got '{value}'" in err.decode()
    assert "Traceback" not in err.decode()


async def test_rbac_mode_needs_tls(tmp_path: Path) -> None:
    proc = await _start("--port", "0", "--kubeconfig", str(tmp_path / "kc"), "--authorization-mode=RBAC")
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 1
    assert err.decode().startswith("--authorization-mode=RBAC needs --tls: kubectl and client-go send bearer tokens")
    proc = await _start("--port", "0", "--kubeconfig", str(tmp_path / "kc"), "--authorization-mode=ABAC")
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 2 and "argument --authorization-mode: invalid choice: 'ABAC'" in err.decode()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("tok,alice\n", "must have at least 3 columns (token, user name, user uid), found 2 on line 1"),
        ('tok,alice,uid,"unterminated\n', "line 1: unexpected end of data"),
    ],
)
async def test_apiserver_command_names_a_bad_token_file(tmp_path: Path, content: str, message: str) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text(content)
    proc = await _start("--port", "0", "--kubeconfig", str(tmp_path / "kc"), "--token-auth-file", str(tokens))
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 1
    assert err.decode().startswith(f"--token-auth-file: token file '{tokens}'"), err.decode()
    assert message in err.decode()
    assert "Traceback" not in err.decode()
    proc = await _start(
        "--port", "0", "--kubeconfig", str(tmp_path / "kc"), "--token-auth-file", str(tmp_path / "nope")
    )
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 1 and "cannot read it: No such file or directory" in err.decode()


async def test_apiserver_command_enforces_rbac_for_token_file_users(tmp_path: Path) -> None:
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('alice-token,alice,uid-1,"viewers"\n')
    port = _free_port()
    kubeconfig = tmp_path / "admin.yaml"
    proc = await _start(
        "--port", str(port), "--kubeconfig", str(kubeconfig), "--tls",
        "--authorization-mode=RBAC", "--token-auth-file", str(tokens),
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        banner = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        assert f"serving at https://127.0.0.1:{port}" in banner
        admin = Kubectl(kubeconfig, tmp_path / "cache-admin")
        alice_config = tmp_path / "alice.yaml"
        alice_config.write_text(kubeconfig.read_text().replace(_admin_token(kubeconfig), "alice-token"))
        alice = Kubectl(alice_config, tmp_path / "cache-alice")
        denied = await alice.run("get", "namespaces")
        assert denied.returncode == 1
        assert 'User "alice" cannot list resource "namespaces" in API group "" at the cluster scope' in denied.stderr
        await admin("create", "clusterrole", "ns-viewer", "--verb=list", "--resource=namespaces")
        await admin("create", "clusterrolebinding", "viewers", "--clusterrole=ns-viewer", "--group=viewers")
        assert "namespace/default" in (await alice("get", "namespaces", "-o", "name")).split()
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), 20)


def _admin_token(kubeconfig: Path) -> str:
    import yaml

    return str(yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"])


async def test_apiserver_data_dir_keeps_what_kubectl_applied_across_a_sigkill(tmp_path: Path) -> None:
    if kubectl_path() is None:
        pytest.skip("kubectl is not installed on this machine; kubectl-driven checks cannot run")
    kubeconfig, data = tmp_path / "kc.yaml", tmp_path / "data"
    kubectl = Kubectl(kubeconfig, tmp_path / "cache")
    proc = await _start("--port", "0", "--kubeconfig", str(kubeconfig), "--data-dir", str(data))
    try:
        assert proc.stdout is not None
        banner = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        assert f"state: persisted in {data / 'kubeplane.db'}" in banner
        await kubectl("apply", "-f", "-", stdin="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept}\n")
        uid = await kubectl("get", "configmap", "kept", "-o", "jsonpath={.metadata.uid}")
        # a second server on the same data dir is refused while the first holds it
        second = await _start("--port", "0", "--kubeconfig", str(tmp_path / "kc2"), "--data-dir", str(data))
        _, err = await asyncio.wait_for(second.communicate(), 30)
        assert second.returncode != 0 and "--data-dir:" in err.decode() and "in use" in err.decode(), err.decode()
    finally:
        proc.kill()  # SIGKILL: nothing is flushed on the way out
        await proc.wait()
    proc = await _start("--port", "0", "--kubeconfig", str(kubeconfig), "--data-dir", str(data))
    try:
        assert proc.stdout is not None
        await asyncio.wait_for(proc.stdout.readline(), 30)
        assert await kubectl("get", "configmap", "kept", "-o", "jsonpath={.metadata.uid}") == uid
    finally:
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 20) == 0


async def test_apiserver_without_a_data_dir_says_its_state_is_in_memory(tmp_path: Path) -> None:
    proc = await _start("--port", "0", "--kubeconfig", str(tmp_path / "kc"))
    try:
        assert proc.stdout is not None
        assert "state: in memory" in (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 20) == 0


def test_a_serving_process_tunes_the_cyclic_collector() -> None:
    # (what `apiserver` calls before it serves; restored after, for the other tests of this process)
    import gc

    from kubeplane.cli import COLLECTOR_THRESHOLDS, tune_collector

    before = gc.get_threshold()
    try:
        tune_collector()
        assert gc.get_threshold() == COLLECTOR_THRESHOLDS
        assert COLLECTOR_THRESHOLDS[0] > 700 and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
