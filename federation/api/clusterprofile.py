"""ClusterProfile (multicluster.x-k8s.io/v1alpha1, SIG Multicluster cluster inventory API)
and this project's registration conventions on top of it.

Field names follow kubernetes-sigs/cluster-inventory-api v1alpha1 so a CRD installed by
another cluster manager and ours describe the same objects. The conventions (which
labels say cell or project, where the kubeconfig lives) are ours and live in `constants`.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from .base import KubeModel, ObjectMeta
from .conditions import Condition, find_condition
from .constants import (
    KUBECONFIG_SECRET_SUFFIX,
    Annotation,
    ClusterRole,
    Kind,
    Label,
    Plural,
)
from .markers import CEL, DateTime, Format, PreserveUnknown, WireRequired


class ClusterManager(KubeModel):
    """The cluster manager that owns the ClusterProfile; immutable."""

    name: str = Field(description="Name of the cluster manager.")


class ClusterProfileSpec(KubeModel):
    """Desired state of a ClusterProfile."""

    display_name: str | None = Field(default=None, description="Human-readable name of the cluster.")
    cluster_manager: Annotated[ClusterManager, CEL("self == oldSelf", "ClusterManager is immutable")] = Field(
        description="Which cluster manager owns this ClusterProfile."
    )


class ClusterVersion(KubeModel):
    """Version information of the cluster."""

    kubernetes: str | None = Field(default=None, description="Kubernetes version of the cluster.")


class Property(KubeModel):
    """A name/value property of the cluster (KEP-4322)."""

    name: str = Field(min_length=1, max_length=253, description="Well-known or custom property name.")
    value: str = Field(min_length=1, max_length=1024, description="Property-dependent value.")
    last_observed_time: DateTime | None = Field(
        default=None, description="When the property was last observed on the cluster."
    )


class NamedExtension(KubeModel):
    """A kubeconfig extension."""

    name: str = Field(description="Nickname of the extension.")
    extension: Annotated[dict[str, Any], PreserveUnknown(), WireRequired()] = Field(
        default_factory=dict, description="Extension data."
    )


class ClusterConnection(KubeModel):
    """How to reach a cluster (a kubeconfig `cluster` entry; hyphenated keys as in kubeconfig)."""

    server: str = Field(description="Address of the API server (https://host:port).")
    tls_server_name: str | None = Field(
        default=None,
        validation_alias="tls-server-name",
        serialization_alias="tls-server-name",
        description="Name to check the server certificate against.",
    )
    insecure_skip_tls_verify: bool | None = Field(
        default=None,
        validation_alias="insecure-skip-tls-verify",
        serialization_alias="insecure-skip-tls-verify",
        description="Skip server certificate verification (insecure).",
    )
    certificate_authority: str | None = Field(
        default=None,
        validation_alias="certificate-authority",
        serialization_alias="certificate-authority",
        description="Path to a CA certificate file.",
    )
    certificate_authority_data: Annotated[str, Format("byte")] | None = Field(
        default=None,
        validation_alias="certificate-authority-data",
        serialization_alias="certificate-authority-data",
        description="PEM CA certificates, base64.",
    )
    proxy_url: str | None = Field(
        default=None,
        validation_alias="proxy-url",
        serialization_alias="proxy-url",
        description="Proxy for requests to the cluster.",
    )
    disable_compression: bool | None = Field(
        default=None,
        validation_alias="disable-compression",
        serialization_alias="disable-compression",
        description="Opt out of response compression.",
    )
    extensions: list[NamedExtension] = Field(default_factory=list, description="Additional information.")


class CredentialProvider(KubeModel):
    """A provider of credentials to connect to the cluster."""

    name: str = Field(description="Provider name.")
    cluster: ClusterConnection | None = Field(default=None, description="How to reach the cluster.")


class ClusterProfileStatus(KubeModel):
    """Observed state of a ClusterProfile."""

    conditions: list[Condition] = Field(default_factory=list, description="E.g. ControlPlaneHealthy.")
    version: ClusterVersion | None = Field(default=None, description="Version of the cluster.")
    properties: list[Property] = Field(default_factory=list, description="Cluster properties.")
    credential_providers: list[CredentialProvider] = Field(
        default_factory=list, description="Providers of credentials to connect to the cluster."
    )

    def condition(self, type_: str) -> Condition | None:
        return find_condition(self.conditions, type_)


class ClusterProfile(KubeModel):
    """A cluster in the inventory: a cell or a project control plane, here."""

    KIND: ClassVar[str] = Kind.CLUSTER_PROFILE
    PLURAL: ClassVar[str] = Plural.CLUSTER_PROFILES

    api_version: Literal["multicluster.x-k8s.io/v1alpha1"] = "multicluster.x-k8s.io/v1alpha1"
    kind: Literal["ClusterProfile"] = "ClusterProfile"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ClusterProfileSpec = Field(description="Desired state of the ClusterProfile.")
    status: ClusterProfileStatus | None = Field(default=None, description="Observed state of the ClusterProfile.")

    @property
    def cluster_name(self) -> str:
        """The cluster name requests carry: metadata.name (the bare project name for projects)."""
        return self.metadata.name or ""

    @property
    def cluster_role(self) -> ClusterRole | None:
        """`cell`, `project`, or None when the label is missing or unknown."""
        return cluster_role_of(self.metadata.labels)

    @property
    def city_code(self) -> str | None:
        return self.metadata.labels.get(Label.TOPOLOGY_CITY_CODE) or None

    @property
    def kubeconfig_secret_name(self) -> str:
        return kubeconfig_secret_name(self.cluster_name, self.metadata.annotations)


def cluster_role_of(labels: dict[str, str]) -> ClusterRole | None:
    value = labels.get(Label.CLUSTER_ROLE)
    try:
        return ClusterRole(value) if value is not None else None
    except ValueError:
        return None


def kubeconfig_secret_name(profile_name: str, annotations: dict[str, str]) -> str:
    """Secret holding a registered cluster's kubeconfig: the kubeconfig-secret annotation,
    else `<profile-name>-kubeconfig`; usable on plain JSON metadata too."""
    return annotations.get(Annotation.KUBECONFIG_SECRET) or f"{profile_name}{KUBECONFIG_SECRET_SUFFIX}"
