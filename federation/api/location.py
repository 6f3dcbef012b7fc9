"""Location: a place Datum runs workloads (`networking.datumapis.com/v1alpha`, served in the
management cluster).

The shape follows Datum's network-services-operator as it is today: cluster-scoped (so a
reference is just a name), the city under `spec.topology["topology.datum.net/city-code"]`.
A WorkloadDeployment's `spec.locationRef` and a Workload placement's `locations` /
`locationSelector` resolve through these objects (`federation.fleet.locations`).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from .base import KubeModel, ObjectMeta
from .conditions import Condition, find_condition
from .constants import Kind, Plural
from .instance import Conditions
from .markers import CEL


class GCPProvider(KubeModel):
    """Where the Location is in Google Cloud."""

    project_id: str = Field(description="GCP project.")
    region: str = Field(description="GCP region, e.g. us-south1.")
    zone: str = Field(description="GCP zone, e.g. us-south1-a.")


class LocationProvider(KubeModel):
    """The infrastructure behind the Location."""

    gcp: GCPProvider | None = Field(default=None, description="Google Cloud.")


Latitude = Annotated[
    str,
    Field(pattern=r"^-?\d{1,2}(\.\d+)?$"),
    CEL("double(self) >= -90.0 && double(self) <= 90.0", "latitude must be between -90 and 90"),
]
Longitude = Annotated[
    str,
    Field(pattern=r"^-?\d{1,3}(\.\d+)?$"),
    CEL("double(self) >= -180.0 && double(self) <= 180.0", "longitude must be between -180 and 180"),
]


class Coordinates(KubeModel):
    """Geographic position, as decimal degrees in strings."""

    latitude: Latitude = Field(description="Latitude, -90 to 90.")
    longitude: Longitude = Field(description="Longitude, -180 to 180.")


class LocationSpec(KubeModel):
    """Desired state of a Location."""

    location_class_name: str = Field(description="Class of the Location, e.g. datum-managed or self-managed.")
    topology: dict[str, str] = Field(
        description="Topology keys; topology.datum.net/city-code names the city whose cells serve the Location."
    )
    provider: LocationProvider = Field(description="The infrastructure behind the Location.")
    coordinates: Coordinates | None = Field(default=None, description="Geographic position.")


class LocationStatus(KubeModel):
    """Observed state of a Location."""

    conditions: Conditions = Field(default_factory=list, description="Ready.")

    def condition(self, type_: str) -> Condition | None:
        return find_condition(self.conditions, type_)


class Location(KubeModel):
    """A place Datum runs workloads; its topology names the city whose cells serve it."""

    KIND: ClassVar[str] = Kind.LOCATION
    PLURAL: ClassVar[str] = Plural.LOCATIONS

    api_version: Literal["networking.datumapis.com/v1alpha"] = "networking.datumapis.com/v1alpha"
    kind: Literal["Location"] = "Location"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: LocationSpec = Field(description="Desired state of the Location.")
    status: LocationStatus | None = Field(default=None, description="Observed state of the Location.")
