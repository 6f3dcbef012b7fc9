"""Workload: a user's instance template and its placements (compute.datumapis.com/v1alpha)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, Self

from pydantic import Field, model_validator

from .base import KubeModel, ObjectMeta
from .conditions import Condition, find_condition
from .constants import Kind, Plural
from .instance import Conditions, InstanceTemplateSpec
from .markers import CEL, Int32, ListType
from .workloaddeployment import HorizontalScaleSettings, LocationRef

CityCode = Annotated[str, Field(min_length=1, pattern=r"^\S+$")]


class LabelSelectorRequirement(KubeModel):
    """A label key, an operator and values (metav1.LabelSelectorRequirement)."""

    key: str = Field(description="Label key the requirement applies to.")
    operator: str = Field(description="In, NotIn, Exists or DoesNotExist.")
    values: Annotated[list[str], ListType("atomic")] = Field(
        default_factory=list, description="Values for In and NotIn; empty for Exists and DoesNotExist."
    )


class LabelSelector(KubeModel):
    """A label query (metav1.LabelSelector); every requirement must match."""

    match_labels: dict[str, str] = Field(default_factory=dict, description="Labels that must equal these values.")
    match_expressions: Annotated[list[LabelSelectorRequirement], ListType("atomic")] = Field(
        default_factory=list, description="Requirements that must all hold."
    )


NON_EMPTY_SELECTOR = CEL(
    "(has(self.matchLabels) && size(self.matchLabels) > 0) || "
    "(has(self.matchExpressions) && size(self.matchExpressions) > 0)",
    "locationSelector must not be empty (it does not mean every location)",
)
ONE_PLACEMENT_SOURCE = CEL(
    "(has(self.locations) ? 1 : 0) + (has(self.locationSelector) ? 1 : 0) + (has(self.cityCodes) ? 1 : 0) == 1",
    "exactly one of locations, locationSelector or cityCodes must be set",
)


class WorkloadPlacement(KubeModel):
    """Where, and at what scale, Instances are deployed: named Locations, a selector over
    Location labels, or (older manifests) city codes."""

    name: str = Field(min_length=1, description="Placement name; part of the deployment names.")
    locations: Annotated[list[LocationRef], Field(min_length=1), ListType("atomic")] | None = Field(
        default=None, description="Locations to deploy in: one WorkloadDeployment per Location."
    )
    location_selector: Annotated[LabelSelector, NON_EMPTY_SELECTOR] | None = Field(
        default=None, description="Deploy in every Location whose labels match (e.g. topology.datum.net/city-code)."
    )
    city_codes: list[CityCode] | None = Field(
        default=None,
        description="City codes to deploy in (older manifests): one WorkloadDeployment per city that has a cell.",
    )
    scale_settings: HorizontalScaleSettings = Field(description="Replica bounds per location or city.")

    @model_validator(mode="after")
    def _one_placement_source(self) -> Self:
        # The Python side of ONE_PLACEMENT_SOURCE and NON_EMPTY_SELECTOR.
        if sum(x is not None for x in (self.locations, self.location_selector, self.city_codes)) != 1:
            raise ValueError(ONE_PLACEMENT_SOURCE.message)
        selector = self.location_selector
        if selector is not None and not (selector.match_labels or selector.match_expressions):
            raise ValueError(NON_EMPTY_SELECTOR.message)
        return self


class WorkloadSpec(KubeModel):
    """Desired state of a Workload."""

    template: InstanceTemplateSpec = Field(description="Template of every Instance.")
    placements: Annotated[list[Annotated[WorkloadPlacement, ONE_PLACEMENT_SOURCE]], ListType("map", ("name",))] = Field(
        min_length=1, description="Where Instances are deployed; at least one placement."
    )


class WorkloadPlacementStatus(KubeModel):
    """Observed state of one placement."""

    name: str = Field(description="Placement name.")
    conditions: Conditions = Field(default_factory=list, description="Conditions of the placement.")
    replicas: Int32 = Field(default=0, description="Instances that exist.")
    current_replicas: Int32 = Field(default=0, description="Instances with the latest settings applied.")
    desired_replicas: Int32 = Field(default=0, description="Instances desired.")
    ready_replicas: Int32 = Field(default=0, description="Instances ready.")


class WorkloadStatus(KubeModel):
    """Observed state of a Workload."""

    conditions: Conditions = Field(default_factory=list, description="Available.")
    deployments: Int32 = Field(default=0, description="WorkloadDeployments that exist.")
    replicas: Int32 = Field(default=0, description="Instances that exist.")
    current_replicas: Int32 = Field(default=0, description="Instances with the latest settings applied.")
    desired_replicas: Int32 = Field(default=0, description="Instances desired.")
    ready_replicas: Int32 = Field(default=0, description="Instances ready.")
    placements: list[WorkloadPlacementStatus] = Field(default_factory=list, description="Per-placement status.")

    def condition(self, type_: str) -> Condition | None:
        return find_condition(self.conditions, type_)


class Workload(KubeModel):
    """A user's workload: an instance template placed in one or more cities."""

    KIND: ClassVar[str] = Kind.WORKLOAD
    PLURAL: ClassVar[str] = Plural.WORKLOADS

    api_version: Literal["compute.datumapis.com/v1alpha"] = "compute.datumapis.com/v1alpha"
    kind: Literal["Workload"] = "Workload"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: WorkloadSpec = Field(description="Desired state of the Workload.")
    status: WorkloadStatus | None = Field(default=None, description="Observed state of the Workload.")
