"""Instance: one running copy of a WorkloadDeployment's template (compute.datumapis.com/v1alpha)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from .base import KubeModel, LocalObjectReference, ObjectMeta, TemplateMeta
from .conditions import Condition, default_instance_conditions, find_condition
from .constants import Kind, Plural
from .markers import (
    CEL,
    Format,
    Int32,
    ListType,
    PortNumberOrName,
    Quantity,
    ResourceList,
    ServerDefault,
)

# --------------------------------------------------------------------- runtime


class NamedPort(KubeModel):
    """A named port of a container or virtual machine."""

    name: str = Field(description="Name other platform features refer to the port by.")
    port: Annotated[int, Format("int32"), Field(ge=1, le=65535)] = Field(description="Port number, 1-65535.")
    protocol: str | None = Field(default=None, description="TCP (default), UDP or SCTP.")


class VolumeAttachment(KubeModel):
    """Attaches one of the Instance's volumes."""

    name: str = Field(description="Name of a volume in spec.volumes.")
    mount_path: str | None = Field(
        default=None, description="Where the volume's filesystem is mounted inside the guest."
    )


class ContainerResourceRequirements(KubeModel):
    """Compute resources of one container."""

    limits: ResourceList = Field(default_factory=dict, description="Maximum resources allowed.")
    requests: ResourceList = Field(default_factory=dict, description="Minimum resources required.")


class ConfigMapKeySelector(KubeModel):
    """Selects a key of a ConfigMap."""

    name: str | None = Field(default=None, description="Name of the ConfigMap.")
    key: str = Field(description="Key to select.")
    optional: bool | None = Field(default=None, description="Whether the ConfigMap or key may be missing.")


class SecretKeySelector(KubeModel):
    """Selects a key of a Secret."""

    name: str | None = Field(default=None, description="Name of the Secret.")
    key: str = Field(description="Key to select.")
    optional: bool | None = Field(default=None, description="Whether the Secret or key may be missing.")


class ObjectFieldSelector(KubeModel):
    """Selects a field of the Instance."""

    api_version: str | None = Field(default=None, description="Version of the schema fieldPath is written in.")
    field_path: str = Field(description="Path of the field to select.")


class ResourceFieldSelector(KubeModel):
    """Selects a container resource (limits or requests)."""

    container_name: str | None = Field(default=None, description="Container whose resource is selected.")
    resource: str = Field(description="Resource to select, e.g. limits.cpu.")
    divisor: Quantity | None = Field(default=None, description="Output format of the exposed resource.")


class FileKeySelector(KubeModel):
    """Selects a key of an env file in one of the Instance's volumes."""

    volume_name: str = Field(description="Name of the volume holding the env file.")
    path: str = Field(description="Path of the env file inside the volume.")
    key: str = Field(description="Key within the env file.")
    optional: Annotated[bool, ServerDefault(False)] | None = Field(
        default=None, description="Whether the file or key may be missing (default false)."
    )


class EnvVarSource(KubeModel):
    """Where an environment variable's value comes from."""

    config_map_key_ref: ConfigMapKeySelector | None = Field(default=None, description="A ConfigMap key.")
    secret_key_ref: SecretKeySelector | None = Field(default=None, description="A Secret key.")
    field_ref: ObjectFieldSelector | None = Field(default=None, description="A field of the Instance.")
    resource_field_ref: ResourceFieldSelector | None = Field(default=None, description="A container resource.")
    file_key_ref: FileKeySelector | None = Field(default=None, description="A key of an env file in a volume.")


class EnvVar(KubeModel):
    """An environment variable of a container."""

    name: str = Field(description="Variable name.")
    value: str | None = Field(default=None, description="Literal value.")
    value_from: EnvVarSource | None = Field(default=None, description="Source of the value when not literal.")


class EnvFromReference(KubeModel):
    """Names a ConfigMap or Secret whose keys all become environment variables."""

    name: str = Field(description="Name of the ConfigMap or Secret, in the Instance's namespace.")
    optional: bool | None = Field(default=None, description="Whether the object may be missing.")


class EnvFromSource(KubeModel):
    """A set of environment variables taken from a ConfigMap or Secret (set one)."""

    prefix: str | None = Field(default=None, description="Prepended to every key taken from the source.")
    config_map_ref: EnvFromReference | None = Field(default=None, description="A ConfigMap.")
    secret_ref: EnvFromReference | None = Field(default=None, description="A Secret.")


class Capabilities(KubeModel):
    """Linux capabilities added to or dropped from a container."""

    add: Annotated[
        list[str], ListType("atomic"), CEL("self.all(c, c != 'ALL')", "ALL cannot be added; name each capability")
    ] = Field(default_factory=list, description="Capabilities to add; the runtime class must grant each.")
    drop: Annotated[list[str], ListType("atomic")] = Field(
        default_factory=list, description="Capabilities to drop (the platform already drops all others)."
    )


class SecurityContext(KubeModel):
    """Security settings of a container."""

    capabilities: Capabilities | None = Field(default=None, description="Capabilities to add or drop.")


class SandboxContainer(KubeModel):
    """A container running in a sandbox."""

    name: str = Field(description="Container name, unique within the sandbox.")
    image: str = Field(description="Fully qualified container image name.")
    command: list[str] = Field(default_factory=list, description="Entrypoint; replaces the image's ENTRYPOINT.")
    args: list[str] = Field(default_factory=list, description="Arguments; replace the image's CMD.")
    env: Annotated[list[EnvVar], ListType("map", ("name",))] = Field(
        default_factory=list, description="Environment variables."
    )
    env_from: list[EnvFromSource] = Field(
        default_factory=list, description="ConfigMaps and Secrets whose keys all become environment variables."
    )
    resources: ContainerResourceRequirements | None = Field(default=None, description="CPU, memory, GPUs.")
    security_context: SecurityContext | None = Field(default=None, description="Capabilities of the container.")
    volume_attachments: list[VolumeAttachment] = Field(default_factory=list, description="Volumes to mount.")
    ports: Annotated[list[NamedPort], ListType("map", ("name",))] = Field(
        default_factory=list, description="Named ports of the container."
    )


class SandboxRuntime(KubeModel):
    """A managed, isolated environment that runs containers."""

    containers: Annotated[list[SandboxContainer], ListType("map", ("name",))] = Field(
        min_length=1, description="Containers to run; at least one."
    )
    image_pull_secrets: list[LocalObjectReference] = Field(
        default_factory=list, description="Secrets in the same namespace used to pull the images."
    )


class VirtualMachineRuntime(KubeModel):
    """A classical virtual machine booting a user-provided image."""

    volume_attachments: list[VolumeAttachment] = Field(min_length=1, description="Volumes to attach; at least one.")
    ports: Annotated[list[NamedPort], ListType("map", ("name",))] = Field(
        default_factory=list, description="Named ports of the virtual machine."
    )


class InstanceRuntimeResources(KubeModel):
    """Resources allocated to an Instance."""

    instance_type: str = Field(description="Instance type, e.g. datumcloud/d1-standard-2.")
    requests: ResourceList = Field(
        default_factory=dict, description="Adjustments to the resources the instance type defines."
    )


class InstanceRuntimeSpec(KubeModel):
    """How the Instance runs: a container sandbox or a virtual machine."""

    resources: InstanceRuntimeResources = Field(description="Resources the Instance must be allocated.")
    class_: Annotated[str, Field(max_length=253)] | None = Field(
        default=None,
        validation_alias="class",
        serialization_alias="class",
        description="RuntimeClass from the platform catalog; empty means the catalog's default.",
    )
    sandbox: SandboxRuntime | None = Field(default=None, description="Run containers in a sandbox.")
    virtual_machine: VirtualMachineRuntime | None = Field(default=None, description="Run a virtual machine.")


# --------------------------------------------------------------------- network


class NetworkRef(KubeModel):
    """Reference to a network."""

    name: str = Field(description="Network name.")
    namespace: str | None = Field(default=None, description="Network namespace; defaults to the Instance's.")


class IPBlock(KubeModel):
    """A CIDR range."""

    cidr: str = Field(description="CIDR, e.g. 192.168.1.0/24.")
    except_: Annotated[list[str], ListType("atomic")] = Field(
        default_factory=list,
        validation_alias="except",
        serialization_alias="except",
        description="CIDRs inside cidr to exclude.",
    )


class NetworkPolicyPeer(KubeModel):
    """A traffic source."""

    ip_block: IPBlock | None = Field(default=None, description="Allow traffic from this CIDR.")


class NetworkPolicyPort(KubeModel):
    """A port (range) traffic is allowed on."""

    protocol: str | None = Field(default=None, description="TCP (default), UDP or SCTP.")
    port: PortNumberOrName | None = Field(default=None, description="Port number or name.")
    end_port: Int32 | None = Field(default=None, description="Last port of a range starting at port.")


class NetworkPolicyIngressRule(KubeModel):
    """Traffic allowed into the Instance's interface."""

    ports: Annotated[list[NetworkPolicyPort], ListType("atomic")] = Field(
        default_factory=list, description="Ports allowed; empty means all."
    )
    from_: Annotated[list[NetworkPolicyPeer], ListType("atomic")] = Field(
        default_factory=list,
        validation_alias="from",
        serialization_alias="from",
        description="Sources allowed; empty means all.",
    )


class InstanceNetworkInterfaceNetworkPolicy(KubeModel):
    """Interface-specific network policy."""

    ingress: list[NetworkPolicyIngressRule] = Field(default_factory=list, description="Ingress rules.")


IPFamily = Literal["IPv4", "IPv6"]


class AddressRequest(KubeModel):
    """An address class requested for an interface."""

    class_: Annotated[str, Field(min_length=1, max_length=63)] = Field(
        validation_alias="class", serialization_alias="class", description="Address class to allocate from."
    )


def _immutable(what: str) -> CEL:
    return CEL("self == oldSelf", f"{what} is immutable and cannot be changed after creation")


# Addresses may be neither added, changed nor removed once the interface exists: the
# rule sits on the interface because a field-level transition rule cannot see the field
# appear or disappear.
ADDRESSES_FIXED = CEL(
    "has(self.addresses) == has(oldSelf.addresses) && (!has(self.addresses) || self.addresses == oldSelf.addresses)",
    "addresses cannot be set, changed or cleared after creation",
)


class InstanceNetworkInterface(KubeModel):
    """A network interface of the Instance."""

    name: Annotated[str, Field(min_length=1, max_length=15), ServerDefault("eth0"), _immutable("name")] | None = Field(
        default=None, description="Interface name inside the Instance; defaults to eth0."
    )
    network: NetworkRef = Field(description="Network the interface attaches to.")
    ip_families: (
        Annotated[
            list[IPFamily],
            Field(min_length=1, max_length=2),
            ServerDefault(["IPv6"]),
            CEL("self.all(f, self.exists_one(g, g == f))", "each IP family may be listed at most once"),
            _immutable("ipFamilies"),
        ]
        | None
    ) = Field(
        default=None,
        validation_alias="ipFamilies",
        serialization_alias="ipFamilies",
        description="IP families of the interface's addresses; defaults to [IPv6].",
    )
    addresses: (
        Annotated[
            list[AddressRequest],
            Field(min_length=1, max_length=4),
            CEL("self.all(a, self.exists_one(b, b.class == a.class))", "each address class may be listed at most once"),
        ]
        | None
    ) = Field(default=None, description="Address classes to allocate; fixed at creation.")
    reclaim_policy: (
        Annotated[Literal["Delete", "Retain"], ServerDefault("Delete"), _immutable("reclaimPolicy")] | None
    ) = Field(default=None, description="Whether the addresses return to the pool when the Instance goes (Delete).")
    network_policy: InstanceNetworkInterfaceNetworkPolicy | None = Field(
        default=None, description="Lowest-priority platform policy for this interface."
    )


# --------------------------------------------------------------------- volumes


class KeyToPath(KubeModel):
    """Projects one key of a ConfigMap or Secret to a file."""

    key: str = Field(description="Key to project.")
    path: str = Field(description="Relative path of the file.")
    mode: Int32 | None = Field(default=None, description="File mode bits (0-0777).")


class ConfigMapVolumeSource(KubeModel):
    """A ConfigMap that populates a volume."""

    name: str | None = Field(default=None, description="ConfigMap name.")
    items: Annotated[list[KeyToPath], ListType("atomic")] = Field(
        default_factory=list, description="Keys to project; all when empty."
    )
    default_mode: Int32 | None = Field(default=None, description="Default file mode bits.")
    optional: bool | None = Field(default=None, description="Whether the ConfigMap may be missing.")


class SecretVolumeSource(KubeModel):
    """A Secret that populates a volume."""

    secret_name: str | None = Field(default=None, description="Secret name.")
    items: Annotated[list[KeyToPath], ListType("atomic")] = Field(
        default_factory=list, description="Keys to project; all when empty."
    )
    default_mode: Int32 | None = Field(default=None, description="Default file mode bits.")
    optional: bool | None = Field(default=None, description="Whether the Secret may be missing.")


class DiskResourceRequirements(KubeModel):
    """Storage resources of a disk."""

    requests: ResourceList = Field(default_factory=dict, description="Minimum storage required.")


class ImageDiskPopulator(KubeModel):
    """Populate a disk from an image."""

    name: str = Field(description="Image name.")


class FilesystemDiskPopulator(KubeModel):
    """Populate a disk with an empty filesystem."""

    type: Literal["ext4"] = Field(description="Filesystem type.")


class DiskPopulator(KubeModel):
    """How a new disk is initialised."""

    image: ImageDiskPopulator | None = Field(default=None, description="From an image.")
    filesystem: FilesystemDiskPopulator | None = Field(default=None, description="With a filesystem.")


class DiskSpec(KubeModel):
    """Desired configuration of a disk."""

    type: Annotated[str, ServerDefault("pd-standard")] | None = Field(
        default=None, description="Disk type; defaults to pd-standard."
    )
    resources: DiskResourceRequirements | None = Field(default=None, description="Disk size.")
    populator: DiskPopulator | None = Field(default=None, description="Initial contents.")


class DiskTemplateVolumeSourceTemplate(KubeModel):
    """Template of the disk created for each Instance."""

    metadata: TemplateMeta | None = Field(default=None, description="Metadata of the created disks.")
    spec: DiskSpec = Field(description="Disk configuration.")


class DiskTemplateVolumeSource(KubeModel):
    """A persistent disk created per Instance."""

    device_name: str | None = Field(default=None, description="Name under /dev/disk/by-id/datumcloud-*.")
    template: DiskTemplateVolumeSourceTemplate = Field(description="Settings of the new disk.")


class InstanceVolume(KubeModel):
    """A volume containers or the VM can attach."""

    name: str = Field(description="Name volumeAttachments refer to.")
    disk: DiskTemplateVolumeSource | None = Field(default=None, description="A persistent disk.")
    config_map: ConfigMapVolumeSource | None = Field(default=None, description="Populated from a ConfigMap.")
    secret: SecretVolumeSource | None = Field(default=None, description="Populated from a Secret.")


# ------------------------------------------------------------------ spec/status


class LocationReference(KubeModel):
    """Reference to a Datum location (Locations are cluster-scoped; `namespace` is kept for
    objects written when they were namespaced)."""

    name: str = Field(description="Location name.")
    namespace: str | None = Field(default=None, description="Location namespace (older Locations only).")


class SchedulingGateRef(KubeModel):
    """A gate that must be removed before the Instance is scheduled."""

    name: str = Field(description="Gate name: Network or Quota.")


class InstanceController(KubeModel):
    """Settings written by the controller that manages the Instance."""

    template_hash: str = Field(description="Hash of the deployment template this Instance was created from.")
    scheduling_gates: Annotated[list[SchedulingGateRef], ListType("map", ("name",))] = Field(
        default_factory=list, description="Gates still blocking scheduling."
    )


class InstanceSpec(KubeModel):
    """Desired state of an Instance."""

    runtime: InstanceRuntimeSpec = Field(description="Sandbox or virtual machine, and its resources.")
    network_interfaces: Annotated[
        list[Annotated[InstanceNetworkInterface, ADDRESSES_FIXED]], ListType("map", ("name",))
    ] = Field(min_length=1, max_length=1, description="Network interfaces; exactly one today.")
    volumes: Annotated[list[InstanceVolume], ListType("map", ("name",))] = Field(
        default_factory=list, description="Volumes available to attach."
    )
    location: LocationReference | None = Field(default=None, description="Location the Instance is scheduled to.")
    controller: InstanceController | None = Field(default=None, description="Written by the managing controller.")


class InstanceTemplateSpec(KubeModel):
    """Template Instances are made from."""

    metadata: TemplateMeta | None = Field(default=None, description="Labels and annotations of the Instances.")
    spec: InstanceSpec = Field(description="Spec of the Instances.")


class InstanceNetworkInterfaceAssignmentsStatus(KubeModel):
    """Addresses assigned to an interface."""

    network_ip: str | None = Field(
        default=None,
        validation_alias="networkIP",
        serialization_alias="networkIP",
        description="Primary IP on the attached network.",
    )
    external_ip: str | None = Field(
        default=None,
        validation_alias="externalIP",
        serialization_alias="externalIP",
        description="External IP, one-to-one NAT to the network IP.",
    )


class InstanceNetworkInterfaceStatus(KubeModel):
    """Observed state of an interface."""

    assignments: InstanceNetworkInterfaceAssignmentsStatus | None = Field(default=None, description="Addresses.")


class InstanceControllerStatus(KubeModel):
    """Observed state written by the runtime."""

    observed_template_hash: str = Field(description="Template hash the runtime has realised.")


Conditions = Annotated[list[Condition], ListType("map", ("type",))]


class InstanceStatus(KubeModel):
    """Observed state of an Instance."""

    conditions: Conditions = Field(default_factory=list, description="Programmed, Available, Ready and QuotaGranted.")
    network_interfaces: list[InstanceNetworkInterfaceStatus] = Field(
        default_factory=list, description="Per-interface addresses, in spec order."
    )
    controller: InstanceControllerStatus | None = Field(default=None, description="Written by the runtime.")
    suspended: bool | None = Field(
        default=None, description="True while the Instance is stopped because its deployment is suspended."
    )

    def condition(self, type_: str) -> Condition | None:
        return find_condition(self.conditions, type_)


def _default_instance_status() -> dict[str, object]:
    return {"conditions": [c.to_wire() for c in default_instance_conditions()]}


class Instance(KubeModel):
    """One running copy (sandbox or virtual machine) of a WorkloadDeployment's template."""

    KIND: ClassVar[str] = Kind.INSTANCE
    PLURAL: ClassVar[str] = Plural.INSTANCES

    api_version: Literal["compute.datumapis.com/v1alpha"] = "compute.datumapis.com/v1alpha"
    kind: Literal["Instance"] = "Instance"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: InstanceSpec = Field(description="Desired state of the Instance.")
    status: Annotated[InstanceStatus, ServerDefault(_default_instance_status())] | None = Field(
        default=None, description="Observed state; conditions default to Unknown until a controller reports."
    )
