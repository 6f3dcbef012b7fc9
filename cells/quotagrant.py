"""Quota grant controller (cell mode, feature gate QuotaGate): decides the ResourceClaims of a
namespace against its ResourceBudgets and reports the budgets' usage.

Request key: (cell = the manager's local cluster, "", namespace name): one request per
namespace, so the work queue serialises every decision about a namespace's budget.
Reads (caches): ResourceClaims, ResourceBudgets. One uncached read: before granting, the
namespace's claims are LISTed live (a cached read may miss this controller's own grant).
Writes, and alone writes: the `Granted` condition of claims (status, merge patch
conditional on the claim's resourceVersion) and the `status` of budgets (field manager
`quota-grant`).
Never writes: claims' spec or metadata, budgets' spec, Instances.

Rules (`quotabudget.decide`, tests/cells/test_quotabudget.py): oldest first, first fit, a
grant never taken back, no budget = unlimited. End to end:
test_a_grant_on_the_watch_removes_the_gate_in_one_pass,
test_a_grant_missed_by_the_watch_is_picked_up_by_the_tier_requeue; zero requests at steady
state (test_zero_writes_when_idle)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from cells.options import CellOptions
from cells.quotabudget import Verdict, budget_status, decide
from cells.readiness import conditions
from federation.api.conditionjson import rfc3339_now, set_condition_json
from federation.api.reasons import ResourceClaimCondition
from federation.api.resources import RESOURCE_BUDGETS, RESOURCE_CLAIMS
from mcruntime import controllerutil
from mcruntime.client import Client
from mcruntime.errors import APIError, is_not_found
from mcruntime.fields import get_list, get_str
from mcruntime.handlers import ClusterName, EnqueueRequestsFromMapFunc
from mcruntime.manager import Manager
from mcruntime.objects import Obj
from mcruntime.reconciler import PermanentError, Result
from mcruntime.request import Request
from mcruntime.source import LOCAL

log = logging.getLogger(__name__)

NAME = "quota-grant"
FIELD_MANAGER = NAME
GRANTED = ResourceClaimCondition.GRANTED.value


def _decide(namespace: str, claims: Sequence[Obj], budgets: Sequence[Obj]) -> dict[str, Verdict]:
    try:
        return decide(claims, budgets)
    except ValueError as exc:  # a budget that cannot be read: nothing is decided until it changes
        raise PermanentError(f"namespace {namespace}: {exc}") from exc


def _changes(claims: Sequence[Obj], verdicts: Mapping[str, Verdict]) -> list[tuple[Obj, Verdict]]:
    """The claims whose stored Granted condition differs from their verdict."""
    out = []
    for claim in claims:
        verdict = verdicts.get(get_str(claim, "metadata.name"))
        stored = conditions(claim).get(GRANTED) or {}
        if verdict is not None and (stored.get("status"), stored.get("reason"), stored.get("message")) != (
            verdict.status,
            verdict.reason,
            verdict.message,
        ):
            out.append((claim, verdict))
    return out


class QuotaGrantController:
    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr

    async def reconcile(self, req: Request) -> Result:
        # 1. the cell (a request without an engaged cluster never gets here: the runtime drops it)
        # 2. fetch (caches); the request names a namespace
        client = self.mgr.get_cluster(req.cluster).client
        namespace = req.name
        claims = await client.list(RESOURCE_CLAIMS, namespace=namespace)
        budgets = await client.list(RESOURCE_BUDGETS, namespace=namespace)
        # 3. early exit: nothing to decide and nothing to report
        if not claims and not budgets:
            return Result()
        # 4. desired verdicts from the pure function, on the cache first
        verdicts = _decide(namespace, claims, budgets)
        # 5. something to write: decide again on the live claims (the cache may lag our own last grant)
        if _changes(claims, verdicts):
            claims = await client.list_live(RESOURCE_CLAIMS, namespace=namespace)
            verdicts = _decide(namespace, claims, budgets)
        # 6. write only the difference: claims whose verdict changed, then budgets' usage
        for claim, verdict in _changes(claims, verdicts):
            await self._write_verdict(client, claim, verdict)
        for budget in budgets:
            await self._write_usage(client, budget, budget_status(budget, claims, verdicts))
        return Result()

    # ------------------------------------------------------------------ writes (one per helper)
    async def _write_verdict(self, client: Client, claim: Obj, verdict: Verdict) -> None:
        conds: list[dict[str, Any]] = [dict(c) for c in get_list(claim, "status.conditions") if isinstance(c, dict)]
        set_condition_json(conds, GRANTED, verdict.status, verdict.reason, verdict.message, now=rfc3339_now())
        try:  # conditional: a verdict decided from an older claim is refused (409)
            await controllerutil.write_status(
                client, RESOURCE_CLAIMS, claim, {"conditions": conds}, field_manager=FIELD_MANAGER, conditional=True
            )
        except APIError as exc:
            if not is_not_found(exc):
                raise  # a 409 (someone wrote first) is retried by the runtime with a fresh read
            return  # the Instance went: nothing to grant
        log.info("claim %s/%s: %s (%s)", get_str(claim, "metadata.namespace", required=False),
                 get_str(claim, "metadata.name", required=False), verdict.reason, verdict.message)  # fmt: skip

    async def _write_usage(self, client: Client, budget: Obj, status: dict[str, Any]) -> None:
        stored = budget.get("status") or {}
        if all(stored.get(key) == value for key, value in status.items()):
            return
        await controllerutil.write_status(client, RESOURCE_BUDGETS, budget, status, field_manager=FIELD_MANAGER)

    # ------------------------------------------------------------------ mapping events to requests
    @staticmethod
    def namespace_of(_cluster: str, obj: Obj) -> list[Request]:
        namespace = get_str(obj, "metadata.namespace", required=False)
        return [Request("", "", namespace)] if namespace else []


def register(mgr: Manager, options: CellOptions) -> None:
    """Wire the watches on the cell (the manager's local cluster), when QuotaGate is on."""
    if not options.quota_gate:
        return
    controller = QuotaGrantController(mgr)
    # one worker: grants of one namespace are serialised by the queue anyway, and one worker
    # keeps the order of decisions across namespaces easy to follow in the log
    ctrl = mgr.new_controller(NAME, controller, workers=1)
    handler = EnqueueRequestsFromMapFunc(controller.namespace_of, cluster_name=ClusterName.INJECT_SOURCE)
    ctrl.watch(RESOURCE_CLAIMS, handler, clusters=LOCAL)
    ctrl.watch(RESOURCE_BUDGETS, handler, clusters=LOCAL)
