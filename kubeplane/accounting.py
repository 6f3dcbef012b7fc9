"""Per-verb, per-resource request counters, so tests and benchmarks can assert facts like
"zero writes at steady state" or "N API calls per converged object". Where a request was
authenticated (RBAC mode) it is also counted under its user, so a test can tell the
managers' writes from its own."""

from __future__ import annotations

from collections import Counter

from .registry import ResourceType

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


def resource_name(rt: ResourceType, subresource: str | None = None) -> str:
    name = f"{rt.plural}.{rt.group}" if rt.group else rt.plural
    return f"{name}/{subresource}" if subresource else name


class RequestCounters:
    def __init__(self) -> None:
        self._counts: Counter[tuple[str, str]] = Counter()
        self._by_user: Counter[tuple[str, str, str]] = Counter()
        self._as: Counter[tuple[str, str, str]] = Counter()

    def count_as(self, output: str, verb: str, rt: ResourceType) -> None:
        """A list or watch answered as `output` ("json", "yaml", "table", "metadata": the
        representation the Accept header asked for), besides its count by verb."""
        self._as[(output, verb, resource_name(rt))] += 1

    def get_as(self, output: str, verb: str, resource: str) -> int:
        """Lists or watches of one resource answered as `output` (e.g. "metadata": PartialObjectMetadata)."""
        return self._as[(output, verb, resource)]

    def count(self, verb: str, rt: ResourceType, subresource: str | None = None, user: str | None = None) -> None:
        resource = resource_name(rt, subresource)
        self._counts[(verb, resource)] += 1
        if user is not None:
            self._by_user[(user, verb, resource)] += 1

    def get(self, verb: str, resource: str) -> int:
        """Count for one verb on one resource ("configmaps", "workloaddeployments.compute.datumapis.com/status")."""
        return self._counts[(verb, resource)]

    def snapshot(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for (verb, resource), n in sorted(self._counts.items()):
            out.setdefault(resource, {})[verb] = n
        return out

    def snapshot_by_user(self) -> dict[str, dict[str, dict[str, int]]]:
        """user → resource → verb → count, for authenticated requests only."""
        out: dict[str, dict[str, dict[str, int]]] = {}
        for (user, verb, resource), n in sorted(self._by_user.items()):
            out.setdefault(user, {}).setdefault(resource, {})[verb] = n
        return out

    def writes(self, resource: str | None = None) -> int:
        return sum(
            n
            for (verb, res), n in self._counts.items()
            if verb in WRITE_VERBS and (resource is None or res == resource or res.startswith(resource + "/"))
        )

    def total(self) -> int:
        return sum(self._counts.values())

    def reset(self) -> None:
        self._counts.clear()
        self._by_user.clear()
        self._as.clear()
