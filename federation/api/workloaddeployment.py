"""WorkloadDeployment: one placement of a Workload in one location (or city) (compute.datumapis.com/v1alpha)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, Self

from pydantic import Field, model_validator

from .base import KubeModel, ObjectMeta
from .conditions import Condition, find_condition
from .constants import InstanceManagementPolicy, Kind, Plural
from .instance import Conditions, InstanceTemplateSpec, LocationReference
from .markers import CEL, Int32, Int64, NonNegativeInt32, Quantity, ServerDefault


class WorkloadReference(KubeModel):
    """The Workload a deployment belongs to."""

    name: str = Field(description="Name of the Workload.")
    uid: str = Field(description="UID of the Workload.")


class MetricTarget(KubeModel):
    """Target value of a metric; set one of the three."""

    value: Quantity | None = Field(default=None, description="Target value of the metric.")
    average_value: Quantity | None = Field(default=None, description="Target average over all Instances.")
    average_utilization: Int32 | None = Field(
        default=None, description="Target average, as a percentage of the requested resource."
    )


class ResourceMetricSource(KubeModel):
    """A resource metric (cpu, memory) known to the platform."""

    name: str = Field(description="Resource name, e.g. cpu.")
    target: MetricTarget = Field(description="Target value.")


class MetricSpec(KubeModel):
    """One metric autoscaling acts on."""

    resource: ResourceMetricSource | None = Field(default=None, description="A resource metric.")


class HorizontalScaleSettings(KubeModel):
    """Replica bounds and autoscaling metrics."""

    min_replicas: NonNegativeInt32 = Field(description="Minimum number of Instances; the replica count when unset.")
    max_replicas: NonNegativeInt32 | None = Field(
        default=None, description="Maximum number of Instances; with metrics, enables autoscaling."
    )
    metrics: list[MetricSpec] = Field(default_factory=list, description="Metrics that drive autoscaling.")
    instance_management_policy: Annotated[str, ServerDefault(InstanceManagementPolicy.ORDERED_READY.value)] | None = (
        Field(default=None, description="How Instances are replaced and scaled; OrderedReady (default).")
    )

    @property
    def autoscaling(self) -> bool:
        """Whether an autoscaler (not the spec) owns the replica count."""
        return self.max_replicas is not None and bool(self.metrics)


class LocationRef(KubeModel):
    """Names a Location (cluster-scoped, so a name is all it takes)."""

    name: str = Field(min_length=1, description="Name of the Location.")


# The two placement eras: `locationRef` (upstream today) or `cityCode` (older manifests).
ONE_PLACEMENT_TARGET = CEL(
    "has(self.locationRef) != has(self.cityCode)", "exactly one of spec.locationRef or spec.cityCode must be set"
)


class WorkloadDeploymentSpec(KubeModel):
    """Desired state of a WorkloadDeployment."""

    workload_ref: WorkloadReference = Field(description="The Workload this deployment belongs to.")
    placement_name: str = Field(description="The Workload placement that produced this deployment.")
    location_ref: LocationRef | None = Field(
        default=None, description="Location the deployment runs in; its city code picks the cells. Or set cityCode."
    )
    city_code: Annotated[str, Field(min_length=1, pattern=r"^\S+$")] | None = Field(  # placement cannot act on spaces
        default=None,
        description="City the deployment runs in (older manifests; matched case-insensitively). Or set locationRef.",
    )
    template: InstanceTemplateSpec = Field(description="Template of every Instance.")
    scale_settings: HorizontalScaleSettings = Field(description="Replica bounds and autoscaling.")
    replicas: NonNegativeInt32 | None = Field(
        default=None,
        description="Replica target (the scale subresource's spec.replicas); scaleSettings.minReplicas when unset.",
    )
    network_attachment: Literal["Netns", "Hypervisor", "HypervisorDeclared"] | None = Field(
        default=None, description="How Instances attach to the network; empty leaves it to the cell."
    )

    @model_validator(mode="after")
    def _one_placement_target(self) -> Self:
        # The Python side of ONE_PLACEMENT_TARGET, so `plan -f` refuses what the server would.
        if (self.location_ref is None) == (self.city_code is None):
            raise ValueError(ONE_PLACEMENT_TARGET.message)
        return self

    @property
    def desired_replicas(self) -> int:
        """`replicas`, or `scaleSettings.minReplicas` when unset."""
        return self.replicas if self.replicas is not None else self.scale_settings.min_replicas


class WorkloadDeploymentStatus(KubeModel):
    """Observed state of a WorkloadDeployment."""

    location: LocationReference | None = Field(default=None, description="Location the deployment was scheduled to.")
    conditions: Conditions = Field(default_factory=list, description="Available and ReplicasReady.")
    replicas: Int32 = Field(default=0, description="Instances that exist (the scale subresource's status.replicas).")
    current_replicas: Int32 = Field(
        default=0, description="Instances on the current template hash with Programmed=True."
    )
    updated_replicas: Int32 = Field(
        default=0, description="Instances on the current template hash, ready or not (Up-to-date column)."
    )
    desired_replicas: Int32 = Field(default=0, description="Instances the deployment wants.")
    ready_replicas: Int32 = Field(default=0, description="Instances with Ready=True.")
    observed_generation: Int64 | None = Field(
        default=None, description="metadata.generation this status was computed from."
    )
    selector: str | None = Field(
        default=None, description="Serialized label selector of the deployment's Instances (scale subresource)."
    )
    suspended: bool | None = Field(
        default=None, description="True while the deployment is suspended (its Instances stay, stopped)."
    )

    def condition(self, type_: str) -> Condition | None:
        return find_condition(self.conditions, type_)


class WorkloadDeployment(KubeModel):
    """One placement of a Workload in one city: the unit federated to cells."""

    KIND: ClassVar[str] = Kind.WORKLOAD_DEPLOYMENT
    PLURAL: ClassVar[str] = Plural.WORKLOAD_DEPLOYMENTS

    api_version: Literal["compute.datumapis.com/v1alpha"] = "compute.datumapis.com/v1alpha"
    kind: Literal["WorkloadDeployment"] = "WorkloadDeployment"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    # Optional as upstream: the API server accepts a WorkloadDeployment with no spec.
    spec: Annotated[WorkloadDeploymentSpec, ONE_PLACEMENT_TARGET] | None = Field(
        default=None, description="Desired state of the deployment."
    )
    status: WorkloadDeploymentStatus | None = Field(default=None, description="Observed state of the deployment.")
