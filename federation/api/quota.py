"""The claim/budget API of the QuotaGate feature (quota.compute.datumapis.com/v1alpha).

Two namespaced kinds, in a subgroup so the compute group stays the upstream-compatible
surface:

- `ResourceClaim` `instance-<instance name>`: what one gated Instance needs (`cpu`,
  `memory`), created by the Instance controller, controller-owned by the Instance (so it
  goes when the Instance goes). Its `Granted` condition is the verdict of the grant
  controller, copied into the Instance's `QuotaGranted`.
- `ResourceBudget`: the quota of a namespace, `spec.hard` per resource. A claim is granted
  when, for every budget in its namespace, the granted claims plus this one stay within
  `hard` for every resource the budget names. A namespace without a budget is unlimited
  (as with Kubernetes ResourceQuota). A grant is never taken back: lowering a budget holds
  new claims back, it does not stop running Instances. `status.used` sums the granted
  claims.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from .base import KubeModel, ObjectMeta
from .conditions import Condition, find_condition
from .constants import Kind, Plural
from .instance import Conditions
from .markers import Int32, ResourceList

# the sizing and requeue rules (INSTANCE_TYPES, CLAIM_NAME_PREFIX, REQUEUE_TIERS,
# REQUEUE_MAX) are in quotarules.py, which the cell controllers read without these models


class ConsumerReference(KubeModel):
    """The object a claim asks resources for."""

    api_version: str = Field(description="API version of the consumer, e.g. compute.datumapis.com/v1alpha.")
    kind: str = Field(description="Kind of the consumer, e.g. Instance.")
    name: str = Field(description="Name of the consumer (same namespace as the claim).")
    uid: str = Field(description="UID of the consumer.")


class ResourceClaimSpec(KubeModel):
    """Desired state of a ResourceClaim."""

    consumer_ref: ConsumerReference = Field(description="The Instance the resources are claimed for.")
    requests: ResourceList = Field(description="Amounts claimed, by resource (cpu, memory).")


class ResourceClaimStatus(KubeModel):
    """Observed state of a ResourceClaim."""

    conditions: Conditions = Field(default_factory=list, description="Granted.")

    def condition(self, type_: str) -> Condition | None:
        return find_condition(self.conditions, type_)


class ResourceClaim(KubeModel):
    """A request for quota on behalf of one Instance (QuotaGate feature)."""

    KIND: ClassVar[str] = Kind.RESOURCE_CLAIM
    PLURAL: ClassVar[str] = Plural.RESOURCE_CLAIMS

    api_version: Literal["quota.compute.datumapis.com/v1alpha"] = "quota.compute.datumapis.com/v1alpha"
    kind: Literal["ResourceClaim"] = "ResourceClaim"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = Field(description="What is claimed, for whom.")
    status: ResourceClaimStatus | None = Field(default=None, description="The grant controller's verdict.")


class ResourceBudgetSpec(KubeModel):
    """Desired state of a ResourceBudget."""

    hard: ResourceList = Field(
        description="Most that the granted claims of the namespace may add up to, by resource (cpu, memory)."
    )


class ResourceBudgetStatus(KubeModel):
    """Observed state of a ResourceBudget."""

    used: ResourceList = Field(default_factory=dict, description="Sum of the granted claims, by resource in hard.")
    granted_claims: Int32 = Field(default=0, description="How many claims of the namespace are granted.")
    pending_claims: Int32 = Field(default=0, description="How many claims of the namespace wait for quota.")


class ResourceBudget(KubeModel):
    """The quota of one namespace: what granted ResourceClaims may add up to."""

    KIND: ClassVar[str] = Kind.RESOURCE_BUDGET
    PLURAL: ClassVar[str] = Plural.RESOURCE_BUDGETS

    api_version: Literal["quota.compute.datumapis.com/v1alpha"] = "quota.compute.datumapis.com/v1alpha"
    kind: Literal["ResourceBudget"] = "ResourceBudget"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceBudgetSpec = Field(description="The namespace's quota.")
    status: ResourceBudgetStatus | None = Field(default=None, description="Usage, written by the grant controller.")
