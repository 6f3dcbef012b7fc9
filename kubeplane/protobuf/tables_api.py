"""Field tables for the non-core packages this server serves, in the form described in
`descriptors.py`: apimachinery meta/v1 (`meta`), apps/v1 (`apps`), autoscaling/v1
(`autoscaling1`) and v2 (`autoscaling`), coordination/v1, events/v1, rbac/v1 and
apiextensions/v1, and the request bodies of authentication/v1 (TokenRequest,
SelfSubjectReview) and authorization/v1 (the self-subject reviews). Field numbers and names
follow each package's generated.proto."""

from __future__ import annotations

META: dict[str, str] = {
    "ObjectMeta": (
        "1 name string; 2 generateName string; 3 namespace string; 4 selfLink string; 5 uid string; "
        "6 resourceVersion string; 7 generation int64; 8 creationTimestamp Time; 9 deletionTimestamp Time; "
        "10 deletionGracePeriodSeconds int64!; 11 labels {string}; 12 annotations {string}; "
        "13 ownerReferences []OwnerReference; 14 finalizers []string; "
        # clusterName (15) was removed in 1.25, but clients older than that still write it
        # (as an empty string, which is dropped like any other empty optional string).
        "15 clusterName string; 17 managedFields []ManagedFieldsEntry"
    ),
    "OwnerReference": (
        "5 apiVersion string!; 1 kind string!; 3 name string!; 4 uid string!; 6 controller bool!; "
        "7 blockOwnerDeletion bool!"
    ),
    "ManagedFieldsEntry": (
        "1 manager string; 2 operation string; 3 apiVersion string; 4 time Time; 6 fieldsType string; "
        "7 fieldsV1 FieldsV1; 8 subresource string"
    ),
    "LabelSelector": "1 matchLabels {string}; 2 matchExpressions []LabelSelectorRequirement",
    "LabelSelectorRequirement": "1 key string!; 2 operator string!; 3 values []string",
    "Condition": (
        "1 type string!; 2 status string!; 3 observedGeneration int64; 4 lastTransitionTime Time; "
        "5 reason string!; 6 message string!"
    ),
    "DeleteOptions": (
        "1 gracePeriodSeconds int64!; 2 preconditions Preconditions; 3 orphanDependents bool!; "
        "4 propagationPolicy string!; 5 dryRun []string; "
        "6 ignoreStoreReadErrorWithClusterBreakingPotential bool!"
    ),
    "Preconditions": "1 uid string!; 2 resourceVersion string!",
}

APPS: dict[str, str] = {
    "Deployment": "1 metadata meta.ObjectMeta; 2 spec DeploymentSpec; 3 status DeploymentStatus",
    "DeploymentSpec": (
        "1 replicas int32!; 2 selector meta.LabelSelector; 3 template core.PodTemplateSpec; "
        "4 strategy DeploymentStrategy; 5 minReadySeconds int32; 6 revisionHistoryLimit int32!; 7 paused bool; "
        "9 progressDeadlineSeconds int32!; 10 podReplacementPolicy string!"
    ),
    "DeploymentStrategy": "1 type string; 2 rollingUpdate RollingUpdateDeployment",
    "RollingUpdateDeployment": "1 maxUnavailable IntOrString; 2 maxSurge IntOrString",
    "DeploymentStatus": (
        "1 observedGeneration int64; 2 replicas int32; 3 updatedReplicas int32; 7 readyReplicas int32; "
        "4 availableReplicas int32; 5 unavailableReplicas int32; 9 terminatingReplicas int32!; "
        "6 conditions []DeploymentCondition; 8 collisionCount int32!"
    ),
    "DeploymentCondition": (
        "1 type string!; 2 status string!; 6 lastUpdateTime Time; 7 lastTransitionTime Time; 4 reason string; "
        "5 message string"
    ),
}

AUTOSCALING_V1: dict[str, str] = {
    "HorizontalPodAutoscaler": (
        "1 metadata meta.ObjectMeta; 2 spec HorizontalPodAutoscalerSpec; 3 status HorizontalPodAutoscalerStatus"
    ),
    "HorizontalPodAutoscalerSpec": (
        "1 scaleTargetRef CrossVersionObjectReference; 2 minReplicas int32!; 3 maxReplicas int32!; "
        "4 targetCPUUtilizationPercentage int32!"
    ),
    "HorizontalPodAutoscalerStatus": (
        "1 observedGeneration int64!; 2 lastScaleTime Time; 3 currentReplicas int32!; 4 desiredReplicas int32!; "
        "5 currentCPUUtilizationPercentage int32!"
    ),
    "CrossVersionObjectReference": "1 kind string!; 2 name string!; 3 apiVersion string",
    # The scale subresource of every kind speaks autoscaling/v1 Scale. replicas is a plain
    # `omitempty` int, but a zero on the wire is a request to scale to zero, so keep it.
    "Scale": "1 metadata meta.ObjectMeta; 2 spec ScaleSpec; 3 status ScaleStatus",
    "ScaleSpec": "1 replicas int32!",
    "ScaleStatus": "1 replicas int32!; 2 selector string",
}

AUTOSCALING_V2: dict[str, str] = {
    "HorizontalPodAutoscaler": (
        "1 metadata meta.ObjectMeta; 2 spec HorizontalPodAutoscalerSpec; 3 status HorizontalPodAutoscalerStatus"
    ),
    "HorizontalPodAutoscalerSpec": (
        "1 scaleTargetRef CrossVersionObjectReference; 2 minReplicas int32!; 3 maxReplicas int32!; "
        "4 metrics []MetricSpec; 5 behavior HorizontalPodAutoscalerBehavior"
    ),
    "CrossVersionObjectReference": "1 kind string!; 2 name string!; 3 apiVersion string",
    "MetricSpec": (
        "1 type string!; 2 object ObjectMetricSource; 3 pods PodsMetricSource; 4 resource ResourceMetricSource; "
        "7 containerResource ContainerResourceMetricSource; 5 external ExternalMetricSource"
    ),
    "ObjectMetricSource": (
        "1 describedObject CrossVersionObjectReference; 2 target MetricTarget; 3 metric MetricIdentifier"
    ),
    "PodsMetricSource": "1 metric MetricIdentifier; 2 target MetricTarget",
    "ResourceMetricSource": "1 name string!; 2 target MetricTarget",
    "ContainerResourceMetricSource": "1 name string!; 2 target MetricTarget; 3 container string!",
    "ExternalMetricSource": "1 metric MetricIdentifier; 2 target MetricTarget",
    "MetricIdentifier": "1 name string!; 2 selector meta.LabelSelector",
    "MetricTarget": "1 type string!; 2 value Quantity; 3 averageValue Quantity; 4 averageUtilization int32!",
    "HorizontalPodAutoscalerBehavior": "1 scaleUp HPAScalingRules; 2 scaleDown HPAScalingRules",
    "HPAScalingRules": (
        "3 stabilizationWindowSeconds int32!; 1 selectPolicy string!; 2 policies []HPAScalingPolicy; "
        "4 tolerance Quantity"
    ),
    "HPAScalingPolicy": "1 type string!; 2 value int32!; 3 periodSeconds int32!",
    "HorizontalPodAutoscalerStatus": (
        "1 observedGeneration int64!; 2 lastScaleTime Time; 3 currentReplicas int32; 4 desiredReplicas int32!; "
        "5 currentMetrics []MetricStatus; 6 conditions []HorizontalPodAutoscalerCondition"
    ),
    "MetricStatus": (
        "1 type string!; 2 object ObjectMetricStatus; 3 pods PodsMetricStatus; 4 resource ResourceMetricStatus; "
        "7 containerResource ContainerResourceMetricStatus; 5 external ExternalMetricStatus"
    ),
    "ObjectMetricStatus": (
        "1 metric MetricIdentifier; 2 current MetricValueStatus; 3 describedObject CrossVersionObjectReference"
    ),
    "PodsMetricStatus": "1 metric MetricIdentifier; 2 current MetricValueStatus",
    "ResourceMetricStatus": "1 name string!; 2 current MetricValueStatus",
    "ContainerResourceMetricStatus": "1 name string!; 2 current MetricValueStatus; 3 container string!",
    "ExternalMetricStatus": "1 metric MetricIdentifier; 2 current MetricValueStatus",
    "MetricValueStatus": "1 value Quantity; 2 averageValue Quantity; 3 averageUtilization int32!",
    "HorizontalPodAutoscalerCondition": (
        "1 type string!; 2 status string!; 3 lastTransitionTime Time; 4 reason string; 5 message string"
    ),
}

COORDINATION: dict[str, str] = {
    "Lease": "1 metadata meta.ObjectMeta; 2 spec LeaseSpec",
    # every LeaseSpec field is a pointer: leaseTransitions=0 is information, not absence
    "LeaseSpec": (
        "1 holderIdentity string!; 2 leaseDurationSeconds int32!; 3 acquireTime MicroTime; "
        "4 renewTime MicroTime; 5 leaseTransitions int32!; 6 strategy string!; 7 preferredHolder string!"
    ),
}

EVENTS: dict[str, str] = {
    "Event": (
        "1 metadata meta.ObjectMeta; 2 eventTime MicroTime; 3 series EventSeries; 4 reportingController string; "
        "5 reportingInstance string; 6 action string; 7 reason string; 8 regarding core.ObjectReference; "
        "9 related core.ObjectReference; 10 note string; 11 type string; 12 deprecatedSource core.EventSource; "
        "13 deprecatedFirstTimestamp Time; 14 deprecatedLastTimestamp Time; 15 deprecatedCount int32"
    ),
    "EventSeries": "1 count int32!; 2 lastObservedTime MicroTime",
}

RBAC: dict[str, str] = {
    "Role": "1 metadata meta.ObjectMeta; 2 rules []PolicyRule!",
    "ClusterRole": "1 metadata meta.ObjectMeta; 2 rules []PolicyRule!; 3 aggregationRule AggregationRule",
    "AggregationRule": "1 clusterRoleSelectors []meta.LabelSelector",
    "PolicyRule": (
        "1 verbs []string!; 2 apiGroups []string; 3 resources []string; 4 resourceNames []string; "
        "5 nonResourceURLs []string"
    ),
    "RoleBinding": "1 metadata meta.ObjectMeta; 2 subjects []Subject; 3 roleRef RoleRef",
    "ClusterRoleBinding": "1 metadata meta.ObjectMeta; 2 subjects []Subject; 3 roleRef RoleRef",
    "Subject": "1 kind string!; 2 apiGroup string; 3 name string!; 4 namespace string",
    "RoleRef": "1 apiGroup string!; 2 kind string!; 3 name string!",
}

APIEXTENSIONS: dict[str, str] = {
    "CustomResourceDefinition": (
        "1 metadata meta.ObjectMeta; 2 spec CustomResourceDefinitionSpec; 3 status CustomResourceDefinitionStatus"
    ),
    "CustomResourceDefinitionSpec": (
        "1 group string!; 3 names CustomResourceDefinitionNames; 4 scope string!; "
        "7 versions []CustomResourceDefinitionVersion!; 9 conversion CustomResourceConversion; "
        "10 preserveUnknownFields bool"
    ),
    "CustomResourceDefinitionNames": (
        "1 plural string!; 2 singular string; 3 shortNames []string; 4 kind string!; 5 listKind string; "
        "6 categories []string"
    ),
    "CustomResourceDefinitionVersion": (
        "1 name string!; 2 served bool!; 3 storage bool!; 7 deprecated bool; 8 deprecationWarning string!; "
        "4 schema CustomResourceValidation; 5 subresources CustomResourceSubresources; "
        "6 additionalPrinterColumns []CustomResourceColumnDefinition; 9 selectableFields []SelectableField"
    ),
    "SelectableField": "1 jsonPath string!",
    "CustomResourceValidation": "1 openAPIV3Schema JSONSchemaProps",
    "CustomResourceSubresources": "1 status CustomResourceSubresourceStatus; 2 scale CustomResourceSubresourceScale",
    "CustomResourceSubresourceStatus": "",
    "CustomResourceSubresourceScale": (
        "1 specReplicasPath string!; 2 statusReplicasPath string!; 3 labelSelectorPath string!"
    ),
    "CustomResourceColumnDefinition": (
        "1 name string!; 2 type string!; 3 format string; 4 description string; 5 priority int32; 6 jsonPath string!"
    ),
    "CustomResourceConversion": "1 strategy string!; 2 webhook WebhookConversion",
    "WebhookConversion": "2 clientConfig WebhookClientConfig; 3 conversionReviewVersions []string!",
    "WebhookClientConfig": "3 url string!; 1 service ServiceReference; 2 caBundle bytes",
    "ServiceReference": "1 namespace string!; 2 name string!; 3 path string!; 4 port int32!",
    "CustomResourceDefinitionStatus": (
        "1 conditions []CustomResourceDefinitionCondition; 2 acceptedNames CustomResourceDefinitionNames; "
        "3 storedVersions []string!"
    ),
    "CustomResourceDefinitionCondition": (
        "1 type string!; 2 status string!; 3 lastTransitionTime Time; 4 reason string; 5 message string"
    ),
    "ExternalDocumentation": "1 description string; 2 url string",
    # The proto names of 2/3 are `schema`/`ref` and of 38..44 `xKubernetes...`; their JSON
    # names are `$schema`, `$ref` and `x-kubernetes-...`.
    "JSONSchemaProps": (
        "1 id string; 2 $schema string; 3 $ref string; 4 description string; 5 type string; 6 format string; "
        "7 title string; 8 default JSON; 9 maximum double!; 10 exclusiveMaximum bool; 11 minimum double!; "
        "12 exclusiveMinimum bool; 13 maxLength int64!; 14 minLength int64!; 15 pattern string; "
        "16 maxItems int64!; 17 minItems int64!; 18 uniqueItems bool; 19 multipleOf double!; 20 enum []JSON; "
        "21 maxProperties int64!; 22 minProperties int64!; 23 required []string; 24 items JSONSchemaPropsOrArray; "
        "25 allOf []JSONSchemaProps; 26 oneOf []JSONSchemaProps; 27 anyOf []JSONSchemaProps; "
        "28 not JSONSchemaProps; 29 properties {JSONSchemaProps}; 30 additionalProperties JSONSchemaPropsOrBool; "
        "31 patternProperties {JSONSchemaProps}; 32 dependencies {JSONSchemaPropsOrStringArray}; "
        "33 additionalItems JSONSchemaPropsOrBool; 34 definitions {JSONSchemaProps}; "
        "35 externalDocs ExternalDocumentation; 36 example JSON; 37 nullable bool; "
        "38 x-kubernetes-preserve-unknown-fields bool!; 39 x-kubernetes-embedded-resource bool; "
        "40 x-kubernetes-int-or-string bool; 41 x-kubernetes-list-map-keys []string; "
        "42 x-kubernetes-list-type string!; 43 x-kubernetes-map-type string!; "
        "44 x-kubernetes-validations []ValidationRule"
    ),
    # The three unions below are reshaped by the decoder into the JSON they stand for
    # (a schema, an array of schemas, a bool or a string array).
    "JSONSchemaPropsOrArray": "1 schema JSONSchemaProps; 2 JSONSchemas []JSONSchemaProps",
    "JSONSchemaPropsOrBool": "1 allows bool!; 2 schema JSONSchemaProps",
    "JSONSchemaPropsOrStringArray": "1 schema JSONSchemaProps; 2 property []string",
    "ValidationRule": (
        "1 rule string!; 2 message string; 3 messageExpression string; 4 reason string!; 5 fieldPath string; "
        "6 optionalOldSelf bool!"
    ),
}


AUTHENTICATION: dict[str, str] = {
    "TokenRequest": "1 metadata meta.ObjectMeta; 2 spec TokenRequestSpec; 3 status TokenRequestStatus",
    "TokenRequestSpec": "1 audiences []string!; 4 expirationSeconds int64; 3 boundObjectRef BoundObjectReference",
    "BoundObjectReference": "1 kind string; 2 apiVersion string; 3 name string; 4 uid string",
    "TokenRequestStatus": "1 token string!; 2 expirationTimestamp Time",
    "SelfSubjectReview": "1 metadata meta.ObjectMeta; 2 status SelfSubjectReviewStatus",
    "SelfSubjectReviewStatus": "1 userInfo UserInfo",
    "UserInfo": "1 username string; 2 uid string; 3 groups []string; 4 extra {ExtraValue}",
    "ExtraValue": "1 items []string",
}

AUTHORIZATION: dict[str, str] = {
    "SelfSubjectAccessReview": (
        "1 metadata meta.ObjectMeta; 2 spec SelfSubjectAccessReviewSpec; 3 status SubjectAccessReviewStatus"
    ),
    "SelfSubjectAccessReviewSpec": (
        "1 resourceAttributes ResourceAttributes; 2 nonResourceAttributes NonResourceAttributes"
    ),
    "ResourceAttributes": (
        "1 namespace string; 2 verb string; 3 group string; 4 version string; 5 resource string; "
        "6 subresource string; 7 name string; 8 fieldSelector FieldSelectorAttributes; "
        "9 labelSelector LabelSelectorAttributes"
    ),
    "FieldSelectorAttributes": "1 rawSelector string; 2 requirements []FieldSelectorRequirement",
    "FieldSelectorRequirement": "1 key string!; 2 operator string!; 3 values []string",
    "LabelSelectorAttributes": "1 rawSelector string; 2 requirements []meta.LabelSelectorRequirement",
    "NonResourceAttributes": "1 path string; 2 verb string",
    "SubjectAccessReviewStatus": "1 allowed bool!; 4 denied bool; 2 reason string; 3 evaluationError string",
    "SelfSubjectRulesReview": (
        "1 metadata meta.ObjectMeta; 2 spec SelfSubjectRulesReviewSpec; 3 status SubjectRulesReviewStatus"
    ),
    "SelfSubjectRulesReviewSpec": "1 namespace string",
    "SubjectRulesReviewStatus": (
        "1 resourceRules []ResourceRule!; 2 nonResourceRules []NonResourceRule!; 3 incomplete bool!; "
        "4 evaluationError string"
    ),
    "ResourceRule": "1 verbs []string!; 2 apiGroups []string; 3 resources []string; 4 resourceNames []string",
    "NonResourceRule": "1 verbs []string!; 2 nonResourceURLs []string",
}
