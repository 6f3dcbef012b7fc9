"""Field tables for k8s.io/api/core/v1 (package `core`), in the form described in
`descriptors.py`. Field numbers and names follow core/v1 generated.proto; the `!` flags
mark pointer fields and fields whose JSON tag has no `omitempty`.

Only the messages reachable from the kinds this server serves are listed (Pod, Node,
Namespace, ConfigMap, Secret, ServiceAccount, Service, Event, ResourceQuota, LimitRange);
PersistentVolume-only sources and Endpoints are left out on purpose."""

from __future__ import annotations

_CONTAINER = (
    "1 name string!; 2 image string; 3 command []string; 4 args []string; 5 workingDir string; "
    "6 ports []ContainerPort; 19 envFrom []EnvFromSource; 7 env []EnvVar; 8 resources ResourceRequirements; "
    "23 resizePolicy []ContainerResizePolicy; 24 restartPolicy string!; "
    "25 restartPolicyRules []ContainerRestartRule; 9 volumeMounts []VolumeMount; 21 volumeDevices []VolumeDevice; "
    "10 livenessProbe Probe; 11 readinessProbe Probe; 22 startupProbe Probe; 12 lifecycle Lifecycle; "
    "13 terminationMessagePath string; 20 terminationMessagePolicy string; 14 imagePullPolicy string; "
    "15 securityContext SecurityContext; 16 stdin bool; 17 stdinOnce bool; 18 tty bool"
)

_POD_AFFINITY = (
    "1 requiredDuringSchedulingIgnoredDuringExecution []PodAffinityTerm; "
    "2 preferredDuringSchedulingIgnoredDuringExecution []WeightedPodAffinityTerm"
)

CORE: dict[str, str] = {
    # ---------------------------------------------------------------- top-level kinds
    "ConfigMap": "1 metadata meta.ObjectMeta; 4 immutable bool!; 2 data {string}; 3 binaryData {bytes}",
    "Secret": "1 metadata meta.ObjectMeta; 5 immutable bool!; 2 data {bytes}; 4 stringData {string}; 3 type string",
    "ServiceAccount": (
        "1 metadata meta.ObjectMeta; 2 secrets []ObjectReference; 3 imagePullSecrets []LocalObjectReference; "
        "4 automountServiceAccountToken bool!"
    ),
    "Namespace": "1 metadata meta.ObjectMeta; 2 spec NamespaceSpec; 3 status NamespaceStatus",
    "NamespaceSpec": "1 finalizers []string",
    "NamespaceStatus": "1 phase string; 2 conditions []NamespaceCondition",
    "NamespaceCondition": (
        "1 type string!; 2 status string!; 4 lastTransitionTime Time; 5 reason string; 6 message string"
    ),
    "ResourceQuota": "1 metadata meta.ObjectMeta; 2 spec ResourceQuotaSpec; 3 status ResourceQuotaStatus",
    "ResourceQuotaSpec": "1 hard {Quantity}; 2 scopes []string; 3 scopeSelector ScopeSelector",
    "ResourceQuotaStatus": "1 hard {Quantity}; 2 used {Quantity}",
    "ScopeSelector": "1 matchExpressions []ScopedResourceSelectorRequirement",
    "ScopedResourceSelectorRequirement": "1 scopeName string!; 2 operator string!; 3 values []string",
    "LimitRange": "1 metadata meta.ObjectMeta; 2 spec LimitRangeSpec",
    "LimitRangeSpec": "1 limits []LimitRangeItem!",
    "LimitRangeItem": (
        "1 type string!; 2 max {Quantity}; 3 min {Quantity}; 4 default {Quantity}; 5 defaultRequest {Quantity}; "
        "6 maxLimitRequestRatio {Quantity}"
    ),
    "Event": (
        "1 metadata meta.ObjectMeta; 2 involvedObject ObjectReference; 3 reason string; 4 message string; "
        "5 source EventSource; 6 firstTimestamp Time; 7 lastTimestamp Time; 8 count int32; 9 type string; "
        "10 eventTime MicroTime; 11 series EventSeries; 12 action string; 13 related ObjectReference; "
        "14 reportingComponent string!; 15 reportingInstance string!"
    ),
    "EventSeries": "1 count int32; 2 lastObservedTime MicroTime",
    "EventSource": "1 component string; 2 host string",
    "ObjectReference": (
        "1 kind string; 2 namespace string; 3 name string; 4 uid string; 5 apiVersion string; "
        "6 resourceVersion string; 7 fieldPath string"
    ),
    "LocalObjectReference": "1 name string",
    "TypedLocalObjectReference": "1 apiGroup string!; 2 kind string!; 3 name string!",
    "TypedObjectReference": "1 apiGroup string!; 2 kind string!; 3 name string!; 4 namespace string!",
    # ---------------------------------------------------------------- services
    "Service": "1 metadata meta.ObjectMeta; 2 spec ServiceSpec; 3 status ServiceStatus",
    "ServiceSpec": (
        "1 ports []ServicePort; 2 selector {string}; 3 clusterIP string; 18 clusterIPs []string; 4 type string; "
        "5 externalIPs []string; 7 sessionAffinity string; 8 loadBalancerIP string; "
        "9 loadBalancerSourceRanges []string; 10 externalName string; 11 externalTrafficPolicy string; "
        "12 healthCheckNodePort int32; 13 publishNotReadyAddresses bool; "
        "14 sessionAffinityConfig SessionAffinityConfig; 19 ipFamilies []string; 17 ipFamilyPolicy string!; "
        "20 allocateLoadBalancerNodePorts bool!; 21 loadBalancerClass string!; "
        "22 internalTrafficPolicy string!; 23 trafficDistribution string!"
    ),
    "ServicePort": (
        "1 name string; 2 protocol string; 6 appProtocol string!; 3 port int32!; 4 targetPort IntOrString; "
        "5 nodePort int32"
    ),
    "SessionAffinityConfig": "1 clientIP ClientIPConfig",
    "ClientIPConfig": "1 timeoutSeconds int32!",
    "ServiceStatus": "1 loadBalancer LoadBalancerStatus; 2 conditions []meta.Condition",
    "LoadBalancerStatus": "1 ingress []LoadBalancerIngress",
    "LoadBalancerIngress": "1 ip string; 2 hostname string; 3 ipMode string!; 4 ports []PortStatus",
    "PortStatus": "1 port int32!; 2 protocol string!; 3 error string!",
    # ---------------------------------------------------------------- pods
    "Pod": "1 metadata meta.ObjectMeta; 2 spec PodSpec; 3 status PodStatus",
    "PodTemplateSpec": "1 metadata meta.ObjectMeta; 2 spec PodSpec",
    "PodSpec": (
        "1 volumes []Volume; 20 initContainers []Container; 2 containers []Container!; "
        "34 ephemeralContainers []EphemeralContainer; 3 restartPolicy string; "
        "4 terminationGracePeriodSeconds int64!; 5 activeDeadlineSeconds int64!; 6 dnsPolicy string; "
        "7 nodeSelector {string}; 8 serviceAccountName string; 9 serviceAccount string; "
        "21 automountServiceAccountToken bool!; 10 nodeName string; 11 hostNetwork bool; 12 hostPID bool; "
        "13 hostIPC bool; 27 shareProcessNamespace bool!; 14 securityContext PodSecurityContext; "
        "15 imagePullSecrets []LocalObjectReference; 16 hostname string; 17 subdomain string; "
        "18 affinity Affinity; 19 schedulerName string; 22 tolerations []Toleration; "
        "23 hostAliases []HostAlias; 24 priorityClassName string; 25 priority int32!; "
        "26 dnsConfig PodDNSConfig; 28 readinessGates []PodReadinessGate; 29 runtimeClassName string!; "
        "30 enableServiceLinks bool!; 31 preemptionPolicy string!; 32 overhead {Quantity}; "
        "33 topologySpreadConstraints []TopologySpreadConstraint; 35 setHostnameAsFQDN bool!; 36 os PodOS; "
        "37 hostUsers bool!; 38 schedulingGates []PodSchedulingGate; 39 resourceClaims []PodResourceClaim; "
        "40 resources ResourceRequirements; 41 hostnameOverride string!; 42 workloadRef WorkloadReference"
    ),
    "Container": _CONTAINER,
    "EphemeralContainerCommon": _CONTAINER,
    "EphemeralContainer": "1 ephemeralContainerCommon EphemeralContainerCommon^; 2 targetContainerName string",
    "ContainerPort": "1 name string; 2 hostPort int32; 3 containerPort int32!; 4 protocol string; 5 hostIP string",
    "ContainerResizePolicy": "1 resourceName string!; 2 restartPolicy string!",
    "ContainerRestartRule": "1 action string!; 2 exitCodes ContainerRestartRuleOnExitCodes",
    "ContainerRestartRuleOnExitCodes": "1 operator string!; 2 values []int32",
    "EnvFromSource": "1 prefix string; 2 configMapRef ConfigMapEnvSource; 3 secretRef SecretEnvSource",
    "ConfigMapEnvSource": "1 localObjectReference LocalObjectReference^; 2 optional bool!",
    "SecretEnvSource": "1 localObjectReference LocalObjectReference^; 2 optional bool!",
    "EnvVar": "1 name string!; 2 value string; 3 valueFrom EnvVarSource",
    "EnvVarSource": (
        "1 fieldRef ObjectFieldSelector; 2 resourceFieldRef ResourceFieldSelector; "
        "3 configMapKeyRef ConfigMapKeySelector; 4 secretKeyRef SecretKeySelector; 5 fileKeyRef FileKeySelector"
    ),
    "ObjectFieldSelector": "1 apiVersion string; 2 fieldPath string!",
    "ResourceFieldSelector": "1 containerName string; 2 resource string!; 3 divisor Quantity",
    "ConfigMapKeySelector": "1 localObjectReference LocalObjectReference^; 2 key string!; 3 optional bool!",
    "SecretKeySelector": "1 localObjectReference LocalObjectReference^; 2 key string!; 3 optional bool!",
    "FileKeySelector": "1 volumeName string!; 2 path string!; 3 key string!; 4 optional bool!",
    "ResourceRequirements": "1 limits {Quantity}; 2 requests {Quantity}; 3 claims []ResourceClaim",
    "ResourceClaim": "1 name string!; 2 request string",
    "VolumeMount": (
        "1 name string!; 2 readOnly bool; 7 recursiveReadOnly string!; 3 mountPath string!; 4 subPath string; "
        "5 mountPropagation string!; 6 subPathExpr string"
    ),
    "VolumeDevice": "1 name string!; 2 devicePath string!",
    "Probe": (
        "1 handler ProbeHandler^; 2 initialDelaySeconds int32; 3 timeoutSeconds int32; 4 periodSeconds int32; "
        "5 successThreshold int32; 6 failureThreshold int32; 7 terminationGracePeriodSeconds int64!"
    ),
    "ProbeHandler": "1 exec ExecAction; 2 httpGet HTTPGetAction; 3 tcpSocket TCPSocketAction; 4 grpc GRPCAction",
    "Lifecycle": "1 postStart LifecycleHandler; 2 preStop LifecycleHandler; 3 stopSignal string!",
    "LifecycleHandler": (
        "1 exec ExecAction; 2 httpGet HTTPGetAction; 3 tcpSocket TCPSocketAction; 4 sleep SleepAction"
    ),
    "ExecAction": "1 command []string",
    "HTTPGetAction": "1 path string; 2 port IntOrString; 3 host string; 4 scheme string; 5 httpHeaders []HTTPHeader",
    "HTTPHeader": "1 name string!; 2 value string!",
    "TCPSocketAction": "1 port IntOrString; 2 host string",
    "GRPCAction": "1 port int32!; 2 service string!",
    "SleepAction": "1 seconds int64!",
    "SecurityContext": (
        "1 capabilities Capabilities; 2 privileged bool!; 3 seLinuxOptions SELinuxOptions; "
        "10 windowsOptions WindowsSecurityContextOptions; 4 runAsUser int64!; 8 runAsGroup int64!; "
        "5 runAsNonRoot bool!; 6 readOnlyRootFilesystem bool!; 7 allowPrivilegeEscalation bool!; "
        "9 procMount string!; 11 seccompProfile SeccompProfile; 12 appArmorProfile AppArmorProfile; "
        "13 ulimits []Ulimit"
    ),
    "PodSecurityContext": (
        "1 seLinuxOptions SELinuxOptions; 8 windowsOptions WindowsSecurityContextOptions; 2 runAsUser int64!; "
        "6 runAsGroup int64!; 3 runAsNonRoot bool!; 4 supplementalGroups []int64; "
        "12 supplementalGroupsPolicy string!; 5 fsGroup int64!; 7 sysctls []Sysctl; "
        "9 fsGroupChangePolicy string!; 10 seccompProfile SeccompProfile; 11 appArmorProfile AppArmorProfile; "
        "13 seLinuxChangePolicy string!"
    ),
    "Capabilities": "1 add []string; 2 drop []string",
    "SELinuxOptions": "1 user string; 2 role string; 3 type string; 4 level string",
    "WindowsSecurityContextOptions": (
        "1 gmsaCredentialSpecName string!; 2 gmsaCredentialSpec string!; 3 runAsUserName string!; 4 hostProcess bool!"
    ),
    "SeccompProfile": "1 type string!; 2 localhostProfile string!",
    "AppArmorProfile": "1 type string!; 2 localhostProfile string!",
    "Sysctl": "1 name string!; 2 value string!",
    "Ulimit": "1 name string!; 2 hard int64!; 3 soft int64!",
    "Affinity": "1 nodeAffinity NodeAffinity; 2 podAffinity PodAffinity; 3 podAntiAffinity PodAntiAffinity",
    "NodeAffinity": (
        "1 requiredDuringSchedulingIgnoredDuringExecution NodeSelector; "
        "2 preferredDuringSchedulingIgnoredDuringExecution []PreferredSchedulingTerm"
    ),
    "NodeSelector": "1 nodeSelectorTerms []NodeSelectorTerm!",
    "NodeSelectorTerm": "1 matchExpressions []NodeSelectorRequirement; 2 matchFields []NodeSelectorRequirement",
    "NodeSelectorRequirement": "1 key string!; 2 operator string!; 3 values []string",
    "PreferredSchedulingTerm": "1 weight int32!; 2 preference NodeSelectorTerm",
    "PodAffinity": _POD_AFFINITY,
    "PodAntiAffinity": _POD_AFFINITY,
    "PodAffinityTerm": (
        "1 labelSelector meta.LabelSelector; 2 namespaces []string; 3 topologyKey string!; "
        "4 namespaceSelector meta.LabelSelector; 5 matchLabelKeys []string; 6 mismatchLabelKeys []string"
    ),
    "WeightedPodAffinityTerm": "1 weight int32!; 2 podAffinityTerm PodAffinityTerm",
    "Toleration": "1 key string; 2 operator string; 3 value string; 4 effect string; 5 tolerationSeconds int64!",
    "HostAlias": "1 ip string!; 2 hostnames []string",
    "PodDNSConfig": "1 nameservers []string; 2 searches []string; 3 options []PodDNSConfigOption",
    "PodDNSConfigOption": "1 name string; 2 value string!",
    "PodReadinessGate": "1 conditionType string!",
    "TopologySpreadConstraint": (
        "1 maxSkew int32!; 2 topologyKey string!; 3 whenUnsatisfiable string!; "
        "4 labelSelector meta.LabelSelector; 5 minDomains int32!; 6 nodeAffinityPolicy string!; "
        "7 nodeTaintsPolicy string!; 8 matchLabelKeys []string"
    ),
    "PodOS": "1 name string!",
    "PodSchedulingGate": "1 name string!",
    "PodResourceClaim": "1 name string!; 3 resourceClaimName string!; 4 resourceClaimTemplateName string!",
    "WorkloadReference": "1 name string!; 2 podGroup string!; 3 podGroupReplicaKey string",
    "PodStatus": (
        "17 observedGeneration int64; 1 phase string; 2 conditions []PodCondition; 3 message string; "
        "4 reason string; 11 nominatedNodeName string; 5 hostIP string; 16 hostIPs []HostIP; 6 podIP string; "
        "12 podIPs []PodIP; 7 startTime Time; 10 initContainerStatuses []ContainerStatus; "
        "8 containerStatuses []ContainerStatus; 9 qosClass string; "
        "13 ephemeralContainerStatuses []ContainerStatus; 14 resize string; "
        "15 resourceClaimStatuses []PodResourceClaimStatus; "
        "18 extendedResourceClaimStatus PodExtendedResourceClaimStatus; 19 allocatedResources {Quantity}; "
        "20 resources ResourceRequirements"
    ),
    "PodCondition": (
        "1 type string!; 7 observedGeneration int64; 2 status string!; 3 lastProbeTime Time; "
        "4 lastTransitionTime Time; 5 reason string; 6 message string"
    ),
    "HostIP": "1 ip string!",
    "PodIP": "1 ip string!",
    "PodResourceClaimStatus": "1 name string!; 2 resourceClaimName string!",
    "PodExtendedResourceClaimStatus": (
        "1 requestMappings []ContainerExtendedResourceRequest; 2 resourceClaimName string!"
    ),
    "ContainerExtendedResourceRequest": "1 containerName string!; 2 resourceName string!; 3 requestName string!",
    "ContainerStatus": (
        "1 name string!; 2 state ContainerState; 3 lastState ContainerState; 4 ready bool!; "
        "5 restartCount int32!; 6 image string!; 7 imageID string!; 8 containerID string; 9 started bool!; "
        "10 allocatedResources {Quantity}; 11 resources ResourceRequirements; "
        "12 volumeMounts []VolumeMountStatus; 13 user ContainerUser; "
        "14 allocatedResourcesStatus []ResourceStatus; 15 stopSignal string!"
    ),
    "ContainerState": (
        "1 waiting ContainerStateWaiting; 2 running ContainerStateRunning; 3 terminated ContainerStateTerminated"
    ),
    "ContainerStateWaiting": "1 reason string; 2 message string",
    "ContainerStateRunning": "1 startedAt Time",
    "ContainerStateTerminated": (
        "1 exitCode int32!; 2 signal int32; 3 reason string; 4 message string; 5 startedAt Time; "
        "6 finishedAt Time; 7 containerID string"
    ),
    "ContainerUser": "1 linux LinuxContainerUser",
    "LinuxContainerUser": "1 uid int64!; 2 gid int64!; 3 supplementalGroups []int64",
    "VolumeMountStatus": (
        "1 name string!; 2 mountPath string!; 3 readOnly bool; 4 recursiveReadOnly string!; 5 volumeStatus VolumeStatus"
    ),
    "VolumeStatus": "1 image ImageVolumeStatus",
    "ImageVolumeStatus": "1 imageRef string!",
    "ResourceStatus": "1 name string!; 2 resources []ResourceHealth",
    "ResourceHealth": "1 resourceID string!; 2 health string; 6 message string!",
    # ---------------------------------------------------------------- volumes
    "Volume": "1 name string!; 2 volumeSource VolumeSource^",
    "VolumeSource": (
        "1 hostPath HostPathVolumeSource; 2 emptyDir EmptyDirVolumeSource; "
        "3 gcePersistentDisk GCEPersistentDiskVolumeSource; "
        "4 awsElasticBlockStore AWSElasticBlockStoreVolumeSource; 5 gitRepo GitRepoVolumeSource; "
        "6 secret SecretVolumeSource; 7 nfs NFSVolumeSource; 8 iscsi ISCSIVolumeSource; "
        "9 glusterfs GlusterfsVolumeSource; 10 persistentVolumeClaim PersistentVolumeClaimVolumeSource; "
        "11 rbd RBDVolumeSource; 12 flexVolume FlexVolumeSource; 13 cinder CinderVolumeSource; "
        "14 cephfs CephFSVolumeSource; 15 flocker FlockerVolumeSource; 16 downwardAPI DownwardAPIVolumeSource; "
        "17 fc FCVolumeSource; 18 azureFile AzureFileVolumeSource; 19 configMap ConfigMapVolumeSource; "
        "20 vsphereVolume VsphereVirtualDiskVolumeSource; 21 quobyte QuobyteVolumeSource; "
        "22 azureDisk AzureDiskVolumeSource; 23 photonPersistentDisk PhotonPersistentDiskVolumeSource; "
        "26 projected ProjectedVolumeSource; 24 portworxVolume PortworxVolumeSource; "
        "25 scaleIO ScaleIOVolumeSource; 27 storageos StorageOSVolumeSource; 28 csi CSIVolumeSource; "
        "29 ephemeral EphemeralVolumeSource; 30 image ImageVolumeSource"
    ),
    "HostPathVolumeSource": "1 path string!; 2 type string!",
    "EmptyDirVolumeSource": "1 medium string; 2 sizeLimit Quantity",
    "GCEPersistentDiskVolumeSource": "1 pdName string!; 2 fsType string; 3 partition int32; 4 readOnly bool",
    "AWSElasticBlockStoreVolumeSource": "1 volumeID string!; 2 fsType string; 3 partition int32; 4 readOnly bool",
    "GitRepoVolumeSource": "1 repository string!; 2 revision string; 3 directory string",
    "SecretVolumeSource": "1 secretName string; 2 items []KeyToPath; 3 defaultMode int32!; 4 optional bool!",
    "KeyToPath": "1 key string!; 2 path string!; 3 mode int32!",
    "NFSVolumeSource": "1 server string!; 2 path string!; 3 readOnly bool",
    "ISCSIVolumeSource": (
        "1 targetPortal string!; 2 iqn string!; 3 lun int32!; 4 iscsiInterface string; 5 fsType string; "
        "6 readOnly bool; 7 portals []string; 8 chapAuthDiscovery bool; 11 chapAuthSession bool; "
        "10 secretRef LocalObjectReference; 12 initiatorName string!"
    ),
    "GlusterfsVolumeSource": "1 endpoints string!; 2 path string!; 3 readOnly bool",
    "PersistentVolumeClaimVolumeSource": "1 claimName string!; 2 readOnly bool",
    "RBDVolumeSource": (
        "1 monitors []string!; 2 image string!; 3 fsType string; 4 pool string; 5 user string; 6 keyring string; "
        "7 secretRef LocalObjectReference; 8 readOnly bool"
    ),
    "FlexVolumeSource": (
        "1 driver string!; 2 fsType string; 3 secretRef LocalObjectReference; 4 readOnly bool; 5 options {string}"
    ),
    "CinderVolumeSource": "1 volumeID string!; 2 fsType string; 3 readOnly bool; 4 secretRef LocalObjectReference",
    "CephFSVolumeSource": (
        "1 monitors []string!; 2 path string; 3 user string; 4 secretFile string; "
        "5 secretRef LocalObjectReference; 6 readOnly bool"
    ),
    "FlockerVolumeSource": "1 datasetName string; 2 datasetUUID string",
    "DownwardAPIVolumeSource": "1 items []DownwardAPIVolumeFile; 2 defaultMode int32!",
    "DownwardAPIVolumeFile": (
        "1 path string!; 2 fieldRef ObjectFieldSelector; 3 resourceFieldRef ResourceFieldSelector; 4 mode int32!"
    ),
    "FCVolumeSource": "1 targetWWNs []string; 2 lun int32!; 3 fsType string; 4 readOnly bool; 5 wwids []string",
    "AzureFileVolumeSource": "1 secretName string!; 2 shareName string!; 3 readOnly bool",
    "ConfigMapVolumeSource": (
        "1 localObjectReference LocalObjectReference^; 2 items []KeyToPath; 3 defaultMode int32!; 4 optional bool!"
    ),
    "VsphereVirtualDiskVolumeSource": (
        "1 volumePath string!; 2 fsType string; 3 storagePolicyName string; 4 storagePolicyID string"
    ),
    "QuobyteVolumeSource": (
        "1 registry string!; 2 volume string!; 3 readOnly bool; 4 user string; 5 group string; 6 tenant string"
    ),
    "AzureDiskVolumeSource": (
        "1 diskName string!; 2 diskURI string!; 3 cachingMode string!; 4 fsType string!; 5 readOnly bool!; "
        "6 kind string!"
    ),
    "PhotonPersistentDiskVolumeSource": "1 pdID string!; 2 fsType string",
    "ProjectedVolumeSource": "1 sources []VolumeProjection!; 2 defaultMode int32!",
    "VolumeProjection": (
        "1 secret SecretProjection; 2 downwardAPI DownwardAPIProjection; 3 configMap ConfigMapProjection; "
        "4 serviceAccountToken ServiceAccountTokenProjection; 5 clusterTrustBundle ClusterTrustBundleProjection; "
        "6 podCertificate PodCertificateProjection"
    ),
    "SecretProjection": "1 localObjectReference LocalObjectReference^; 2 items []KeyToPath; 4 optional bool!",
    "ConfigMapProjection": "1 localObjectReference LocalObjectReference^; 2 items []KeyToPath; 4 optional bool!",
    "DownwardAPIProjection": "1 items []DownwardAPIVolumeFile",
    "ServiceAccountTokenProjection": "1 audience string; 2 expirationSeconds int64!; 3 path string!",
    "ClusterTrustBundleProjection": (
        "1 name string!; 2 signerName string!; 3 labelSelector meta.LabelSelector; 5 optional bool!; 4 path string!"
    ),
    "PodCertificateProjection": (
        "1 signerName string; 2 keyType string; 3 maxExpirationSeconds int32!; 4 credentialBundlePath string; "
        "5 keyPath string; 6 certificateChainPath string; 7 userAnnotations {string}"
    ),
    "PortworxVolumeSource": "1 volumeID string!; 2 fsType string; 3 readOnly bool",
    "ScaleIOVolumeSource": (
        "1 gateway string!; 2 system string!; 3 secretRef LocalObjectReference; 4 sslEnabled bool; "
        "5 protectionDomain string; 6 storagePool string; 7 storageMode string; 8 volumeName string; "
        "9 fsType string; 10 readOnly bool"
    ),
    "StorageOSVolumeSource": (
        "1 volumeName string; 2 volumeNamespace string; 3 fsType string; 4 readOnly bool; "
        "5 secretRef LocalObjectReference"
    ),
    "CSIVolumeSource": (
        "1 driver string!; 2 readOnly bool!; 3 fsType string!; 4 volumeAttributes {string}; "
        "5 nodePublishSecretRef LocalObjectReference"
    ),
    "EphemeralVolumeSource": "1 volumeClaimTemplate PersistentVolumeClaimTemplate",
    "PersistentVolumeClaimTemplate": "1 metadata meta.ObjectMeta; 2 spec PersistentVolumeClaimSpec",
    "PersistentVolumeClaimSpec": (
        "1 accessModes []string; 4 selector meta.LabelSelector; 2 resources VolumeResourceRequirements; "
        "3 volumeName string; 5 storageClassName string!; 6 volumeMode string!; "
        "7 dataSource TypedLocalObjectReference; 8 dataSourceRef TypedObjectReference; "
        "9 volumeAttributesClassName string!"
    ),
    "VolumeResourceRequirements": "1 limits {Quantity}; 2 requests {Quantity}",
    "ImageVolumeSource": "1 reference string; 2 pullPolicy string",
    # ---------------------------------------------------------------- nodes
    "Node": "1 metadata meta.ObjectMeta; 2 spec NodeSpec; 3 status NodeStatus",
    "NodeSpec": (
        "1 podCIDR string; 7 podCIDRs []string; 3 providerID string; 4 unschedulable bool; 5 taints []Taint; "
        "6 configSource NodeConfigSource; 2 externalID string"
    ),
    "Taint": "1 key string!; 2 value string; 3 effect string!; 4 timeAdded Time",
    "NodeConfigSource": "2 configMap ConfigMapNodeConfigSource",
    "ConfigMapNodeConfigSource": (
        "1 namespace string!; 2 name string!; 3 uid string; 4 resourceVersion string; 5 kubeletConfigKey string!"
    ),
    "NodeStatus": (
        "1 capacity {Quantity}; 2 allocatable {Quantity}; 3 phase string; 4 conditions []NodeCondition; "
        "5 addresses []NodeAddress; 6 daemonEndpoints NodeDaemonEndpoints; 7 nodeInfo NodeSystemInfo; "
        "8 images []ContainerImage; 9 volumesInUse []string; 10 volumesAttached []AttachedVolume; "
        "11 config NodeConfigStatus; 12 runtimeHandlers []NodeRuntimeHandler; 13 features NodeFeatures; "
        "14 declaredFeatures []string"
    ),
    "NodeCondition": (
        "1 type string!; 2 status string!; 3 lastHeartbeatTime Time; 4 lastTransitionTime Time; "
        "5 reason string; 6 message string"
    ),
    "NodeAddress": "1 type string!; 2 address string!",
    "NodeDaemonEndpoints": "1 kubeletEndpoint DaemonEndpoint",
    "DaemonEndpoint": "1 Port int32!",
    "NodeSystemInfo": (
        "1 machineID string!; 2 systemUUID string!; 3 bootID string!; 4 kernelVersion string!; "
        "5 osImage string!; 6 containerRuntimeVersion string!; 7 kubeletVersion string!; "
        "8 kubeProxyVersion string!; 9 operatingSystem string!; 10 architecture string!; 11 swap NodeSwapStatus"
    ),
    "NodeSwapStatus": "1 capacity int64!",
    "ContainerImage": "1 names []string!; 2 sizeBytes int64",
    "AttachedVolume": "1 name string!; 2 devicePath string!",
    "NodeConfigStatus": (
        "1 assigned NodeConfigSource; 2 active NodeConfigSource; 3 lastKnownGood NodeConfigSource; 4 error string"
    ),
    "NodeRuntimeHandler": "1 name string!; 2 features NodeRuntimeHandlerFeatures",
    "NodeRuntimeHandlerFeatures": "1 recursiveReadOnlyMounts bool!; 2 userNamespaces bool!",
    "NodeFeatures": "1 supplementalGroupsPolicy bool!; 2 containerUlimits bool!",
}
