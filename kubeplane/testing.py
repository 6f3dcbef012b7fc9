"""Helpers for tests that drive embedded API servers with the real kubectl.

kubectl runs as a subprocess without blocking the event loop, because the API server it
talks to usually lives in the same process. Each Kubectl gets its own discovery cache
directory so one test's CRDs never leak into another's cached discovery."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


def kubectl_path() -> str | None:
    return shutil.which("kubectl")


@dataclass
class KubectlResult:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    def check(self) -> KubectlResult:
        if self.returncode != 0:
            command = " ".join(self.args)
            raise AssertionError(
                f"kubectl {command} exited {self.returncode}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}"
            )
        return self


class Kubectl:
    def __init__(self, kubeconfig: Path, cache_dir: Path, binary: str | None = None) -> None:
        found = binary or kubectl_path()
        if found is None:
            raise RuntimeError("kubectl is not installed")
        self.binary = found
        self.kubeconfig = kubeconfig
        self.cache_dir = cache_dir

    async def run(self, *args: str, stdin: str | None = None, within: float = 60.0) -> KubectlResult:
        env = dict(os.environ, KUBECONFIG=str(self.kubeconfig), KUBECACHEDIR=str(self.cache_dir))
        proc = await asyncio.create_subprocess_exec(
            self.binary,
            *args,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin is not None else None), within)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise AssertionError(f"kubectl {' '.join(args)} did not finish within {within}s") from None
        return KubectlResult(tuple(args), proc.returncode or 0, out.decode(), err.decode())

    async def __call__(self, *args: str, stdin: str | None = None, within: float = 60.0) -> str:
        """Run kubectl and return stdout; fail the test on a non-zero exit."""
        return (await self.run(*args, stdin=stdin, within=within)).check().stdout
