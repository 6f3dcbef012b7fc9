from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeplane import EmbeddedAPIServer
from mcruntime import Cluster, ConfigError, connection
from mcruntime.resources import NAMESPACES


async def namespaces_via(config: connection.ConnectionConfig) -> list[str]:
    cluster = Cluster("c", config)
    async with cluster.started():
        items = await cluster.client.list_live(NAMESPACES)
    return sorted(i["metadata"]["name"] for i in items)


async def test_tls_server_with_token_from_a_kubeconfig_file(tmp_path: Path) -> None:
    async with EmbeddedAPIServer(tls=True, kubeconfig=tmp_path / "kc") as server:
        config = await connection.from_kubeconfig_file(tmp_path / "kc")
        assert config.host.startswith("https://") and config.ssl_context is not None
        assert "default" in await namespaces_via(config)
        as_dict = await connection.from_kubeconfig_dict(server.kubeconfig())
        assert "default" in await namespaces_via(as_dict)


async def test_exec_credentials_are_refreshed_when_the_server_says_401(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        "import json, pathlib, sys\n"
        f"token = pathlib.Path({str(token_file)!r}).read_text().strip()\n"
        "calls = pathlib.Path(sys.argv[1]); calls.write_text(str(int(calls.read_text() or 0) + 1))\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', 'kind': 'ExecCredential',"
        " 'status': {'token': token}}))\n"
    )
    calls = tmp_path / "calls"
    calls.write_text("0")
    async with EmbeddedAPIServer(tls=True) as server:
        token_file.write_text(str(server.token))
        kc: dict[str, Any] = server.kubeconfig()
        kc["users"][0]["user"] = {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1",
                "command": sys.executable,
                "args": [str(plugin), str(calls)],
                "interactiveMode": "Never",
            }
        }
        config = await connection.from_kubeconfig_dict(kc)
        cluster = Cluster("c", config)
        async with cluster.started():
            assert await cluster.client.list_live(NAMESPACES)
            assert calls.read_text() == "1"
            server.plane.token = "rotated"  # the server now wants another token...
            token_file.write_text("rotated")  # ...which the plugin hands out from now on
            assert await cluster.client.list_live(NAMESPACES)
            assert calls.read_text() == "2", "a 401 must re-run the exec plugin once"


def test_in_cluster_configuration_reads_the_service_account(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "namespace").write_text("federation-system")
    from kubeplane.tls import make_serving_cert

    (tmp_path / "ca.crt").write_bytes(make_serving_cert(["127.0.0.1"]).ca_pem)
    config = connection.in_cluster(
        token_file=str(tmp_path / "token"),
        ca_file=str(tmp_path / "ca.crt"),
        environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"},
    )
    assert config.host == "https://10.0.0.1:443"
    assert config.default_namespace == "federation-system"
    with pytest.raises(ConfigError, match="in-cluster"):
        connection.in_cluster(token_file=str(tmp_path / "token"), ca_file=str(tmp_path / "ca.crt"), environ={})


async def test_in_cluster_token_header(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("sa-token")
    from kubeplane.tls import make_serving_cert

    (tmp_path / "ca.crt").write_bytes(make_serving_cert(["127.0.0.1"]).ca_pem)
    config = connection.in_cluster(
        token_file=str(tmp_path / "token"),
        ca_file=str(tmp_path / "ca.crt"),
        environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"},
    )
    assert await config.auth.authorization() == "Bearer sa-token"


def base_kubeconfig() -> dict[str, Any]:
    return {
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda kc: kc.pop("clusters"), "no 'clusters' list"),
        (lambda kc: kc.update({"current-context": "nope"}), "context 'nope' not found"),
        (lambda kc: kc["contexts"][0]["context"].update(cluster="ghost"), "names cluster 'ghost'"),
        (lambda kc: kc["clusters"][0]["cluster"].pop("server"), "has no server URL"),
        (lambda kc: kc.pop("current-context"), "no current-context"),
    ],
)
async def test_broken_kubeconfigs_get_errors_that_name_the_problem(mutate: Any, message: str) -> None:
    kc = base_kubeconfig()
    mutate(kc)
    with pytest.raises(ConfigError, match=message):
        await connection.from_kubeconfig_dict(kc)


async def test_kubeconfig_text_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid YAML"):
        await connection.from_kubeconfig_bytes(b"clusters: [")
    with pytest.raises(ConfigError, match="must be a mapping"):
        await connection.from_kubeconfig_bytes(b"- a list")
    with pytest.raises(ConfigError, match="no such file"):
        await connection.from_kubeconfig_file(tmp_path / "missing")


@pytest.mark.parametrize(
    "user",
    [
        {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/sh"}},
        {"tokenFile": "/etc/passwd"},
        {"client-certificate": "/etc/cert"},
    ],
)
async def test_kubeconfigs_from_api_objects_may_not_run_programs_or_read_files(user: dict[str, Any]) -> None:
    kc = base_kubeconfig()
    kc["users"][0]["user"] = user
    with pytest.raises(ConfigError, match="inline credentials"):
        await connection.from_kubeconfig_dict(kc, allow_local_access=False)


async def test_fingerprints_change_with_credentials() -> None:
    a = await connection.from_kubeconfig_dict(base_kubeconfig())
    kc = base_kubeconfig()
    kc["users"][0]["user"]["token"] = "other"
    b = await connection.from_kubeconfig_dict(kc)
    assert a.fingerprint != b.fingerprint
    assert a.fingerprint == (await connection.from_kubeconfig_bytes(yaml.safe_dump(base_kubeconfig()))).fingerprint


async def test_exec_credentials_are_rerun_when_they_expire(tmp_path: Path) -> None:
    """The private kubernetes-asyncio pieces the refresh relies on (`_is_expired`, the
    loader's exec expiry) are pinned by the dependency range; this test notices if they move."""
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        "import json, pathlib, sys, datetime\n"
        "calls = pathlib.Path(sys.argv[1]); calls.write_text(str(int(calls.read_text() or 0) + 1))\n"
        "expired = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5))"
        ".strftime('%Y-%m-%dT%H:%M:%SZ')\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', 'kind': 'ExecCredential',"
        " 'status': {'token': sys.argv[2], 'expirationTimestamp': expired}}))\n"
    )
    calls = tmp_path / "calls"
    calls.write_text("0")
    async with EmbeddedAPIServer(tls=True) as server:
        kc: dict[str, Any] = server.kubeconfig()
        kc["users"][0]["user"] = {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1",
                "command": sys.executable,
                "args": [str(plugin), str(calls), str(server.token)],
                "interactiveMode": "Never",
            }
        }
        config = await connection.from_kubeconfig_dict(kc)
        cluster = Cluster("c", config)
        async with cluster.started():
            assert await cluster.client.list_live(NAMESPACES)
            first = int(calls.read_text())
            assert await cluster.client.list_live(NAMESPACES)
            assert int(calls.read_text()) > first, "an expired exec credential is fetched again before use"


async def test_tls_is_verified_unless_the_kubeconfig_says_otherwise(caplog: Any) -> None:
    """Every cluster connection verifies the server against the kubeconfig's CA; a wrong
    CA fails, and only `insecure-skip-tls-verify` in the kubeconfig itself turns that off
    (with a warning)."""
    import base64
    import logging

    from kubeplane.tls import make_serving_cert
    from mcruntime import Transport, TransportError

    async with EmbeddedAPIServer(tls=True) as server:
        good = server.kubeconfig()
        assert await namespaces_via(await connection.from_kubeconfig_dict(good))
        wrong = copy.deepcopy(good)
        other_ca = make_serving_cert(["127.0.0.1"]).ca_pem
        wrong["clusters"][0]["cluster"]["certificate-authority-data"] = base64.b64encode(other_ca).decode()
        async with Transport(await connection.from_kubeconfig_dict(wrong), cluster="c") as transport:
            with pytest.raises(TransportError, match=r"(?i)certificate"):
                await transport.request("GET", "/api/v1/namespaces", verb="list")
        insecure = copy.deepcopy(wrong)
        del insecure["clusters"][0]["cluster"]["certificate-authority-data"]
        insecure["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
        with caplog.at_level(logging.WARNING, logger="mcruntime.connection"):
            config = await connection.from_kubeconfig_dict(insecure)
        assert "TLS verification is off" in caplog.text
        assert await namespaces_via(config)
