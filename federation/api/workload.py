"""Workload: a user's instance template and its placements (compute.datumapis.com/v1alpha)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from .base import KubeModel, ObjectMeta
from .conditions import Condition, find_condition
from .constants import Kind, Plural
from .instance import Conditions, InstanceTemplateSpec
from .markers import Int32, ListType
from .workloaddeployment import HorizontalScaleSettings

CityCode = Annotated[str, Field(min_length=1, pattern=r"^\S+$")]


class WorkloadPlacement(KubeModel):
    """Where, and at what scale, Instances are deployed."""

    name: str = Field(min_length=1, description="Placement name; part of the deployment names.")
    city_codes: list[CityCode] = Field(
        description="City codes to deploy in: one WorkloadDeployment per city that has a registered cell."
    )
    scale_settings: HorizontalScaleSettings = Field(description="Replica bounds per city.")


class WorkloadSpec(KubeModel):
    """Desired state of a Workload."""

    template: InstanceTemplateSpec = Field(description="Template of every Instance.")
    placements: Annotated[list[WorkloadPlacement], ListType("map", ("name",))] = Field(
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
