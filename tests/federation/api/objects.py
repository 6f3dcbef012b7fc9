"""Realistic wire objects, shaped like what an API server returns (server-set metadata,
managedFields, defaulted fields, full status), shared by the model and server tests."""

from __future__ import annotations

import copy
from typing import Any

TEMPLATE_SPEC: dict[str, Any] = {
    "runtime": {
        "resources": {"instanceType": "datumcloud/d1-standard-2", "requests": {"cpu": "500m", "memory": 1073741824}},
        "sandbox": {
            "containers": [
                {
                    "name": "nginx",
                    "image": "docker.io/library/nginx:1.27",
                    "command": ["nginx"],
                    "args": ["-g", "daemon off;"],
                    "env": [
                        {"name": "GREETING", "value": "hello"},
                        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
                        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    ],
                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "250m"}},
                    "volumeAttachments": [{"name": "data", "mountPath": "/data"}, {"name": "config"}],
                    "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
                }
            ],
            "imagePullSecrets": [{"name": "registry"}],
        },
    },
    "networkInterfaces": [
        {
            "network": {"name": "default", "namespace": "default"},
            "networkPolicy": {
                "ingress": [
                    {
                        "ports": [{"protocol": "TCP", "port": 80}, {"port": "https", "endPort": 8443}],
                        "from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}],
                    }
                ]
            },
        }
    ],
    "volumes": [
        {
            "name": "data",
            "disk": {
                "deviceName": "data",
                "template": {
                    "metadata": {"labels": {"tier": "fast"}},
                    "spec": {
                        "type": "pd-standard",
                        "resources": {"requests": {"storage": "10Gi"}},
                        "populator": {"filesystem": {"type": "ext4"}},
                    },
                },
            },
        },
        {"name": "config", "configMap": {"name": "web-config", "items": [{"key": "nginx.conf", "path": "nginx.conf"}]}},
        {"name": "tls", "secret": {"secretName": "web-tls", "defaultMode": 420, "optional": False}},
    ],
}

CONDITION_TIME = "2025-01-02T03:04:05Z"


def workload_deployment() -> dict[str, Any]:
    return {
        "apiVersion": "compute.datumapis.com/v1alpha",
        "kind": "WorkloadDeployment",
        "metadata": {
            "name": "web-edge-dfw",
            "namespace": "default",
            "uid": "5b1c3a2e-0000-4000-8000-000000000001",
            "resourceVersion": "4711",
            "generation": 3,
            "creationTimestamp": "2025-01-02T03:00:00Z",
            "labels": {
                "compute.datumapis.com/workload-name": "web",
                "compute.datumapis.com/placement-name": "edge",
                "compute.datumapis.com/city-code": "DFW",
            },
            "annotations": {"compute.datumapis.com/ordinal-start": "2"},
            "finalizers": ["compute.datumapis.com/federator"],
            "ownerReferences": [
                {
                    "apiVersion": "compute.datumapis.com/v1alpha",
                    "kind": "Workload",
                    "name": "web",
                    "uid": "5b1c3a2e-0000-4000-8000-000000000000",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": [
                {
                    "manager": "federation-manager",
                    "operation": "Apply",
                    "apiVersion": "compute.datumapis.com/v1alpha",
                    "time": "2025-01-02T03:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {"f:cityCode": {}}},
                }
            ],
        },
        "spec": {
            "workloadRef": {"name": "web", "uid": "5b1c3a2e-0000-4000-8000-000000000000"},
            "placementName": "edge",
            "cityCode": "DFW",
            "template": {
                "metadata": {
                    "labels": {"app": "web"},
                    "annotations": {"compute.datumapis.com/restartedAt": "2025-01-02T03:00:00Z"},
                },
                "spec": copy.deepcopy(TEMPLATE_SPEC),
            },
            "scaleSettings": {
                "minReplicas": 2,
                "maxReplicas": 5,
                "metrics": [{"resource": {"name": "cpu", "target": {"averageUtilization": 70}}}],
                "instanceManagementPolicy": "OrderedReady",
            },
            "replicas": 3,
        },
        "status": {
            "conditions": [
                {
                    "type": "Available",
                    "status": "True",
                    "observedGeneration": 3,
                    "lastTransitionTime": CONDITION_TIME,
                    "reason": "StableInstanceFound",
                    "message": "2 of 3 instances ready",
                },
                {
                    "type": "ReplicasReady",
                    "status": "False",
                    "observedGeneration": 3,
                    "lastTransitionTime": CONDITION_TIME,
                    "reason": "AwaitingPropagation",
                    "message": "",
                },
            ],
            "replicas": 3,
            "currentReplicas": 2,
            "updatedReplicas": 3,
            "desiredReplicas": 3,
            "readyReplicas": 2,
            "observedGeneration": 3,
            "selector": "compute.datumapis.com/workload-deployment-name=web-edge-dfw",
        },
    }


def instance() -> dict[str, Any]:
    return {
        "apiVersion": "compute.datumapis.com/v1alpha",
        "kind": "Instance",
        "metadata": {
            "name": "web-edge-dfw-2",
            "namespace": "ns-0f9c1a52-7e0b-4c1f-9d7e-2c7d5e8b9a10",
            "uid": "5b1c3a2e-0000-4000-8000-000000000002",
            "resourceVersion": "4712",
            "generation": 1,
            "creationTimestamp": "2025-01-02T03:01:00Z",
            "labels": {
                "compute.datumapis.com/workload-uid": "5b1c3a2e-0000-4000-8000-000000000000",
                "compute.datumapis.com/workload-deployment-uid": "5b1c3a2e-0000-4000-8000-000000000001",
                "compute.datumapis.com/workload-deployment-name": "web-edge-dfw",
                "compute.datumapis.com/instance-index": "2",
                "compute.datumapis.com/city-code": "DFW",
                "compute.datumapis.com/workload-name": "web",
                "compute.datumapis.com/placement-name": "edge",
                "meta.datumapis.com/upstream-cluster-name": "cluster-acme_web",
                "meta.datumapis.com/upstream-namespace": "default",
            },
            "finalizers": ["compute.datumapis.com/instance-controller"],
            "ownerReferences": [
                {
                    "apiVersion": "compute.datumapis.com/v1alpha",
                    "kind": "WorkloadDeployment",
                    "name": "web-edge-dfw",
                    "uid": "5b1c3a2e-0000-4000-8000-000000000001",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            **copy.deepcopy(TEMPLATE_SPEC),
            "location": {"name": "dfw-1", "namespace": "datum-cloud"},
            "controller": {"templateHash": "7d9f8c6b5a", "schedulingGates": [{"name": "Quota"}]},
        },
        "status": {
            "conditions": [
                {
                    "type": "Programmed",
                    "status": "True",
                    "observedGeneration": 1,
                    "lastTransitionTime": CONDITION_TIME,
                    "reason": "Programmed",
                    "message": "Pod web-edge-dfw-2 created",
                },
                {
                    "type": "Available",
                    "status": "False",
                    "observedGeneration": 1,
                    "lastTransitionTime": CONDITION_TIME,
                    "reason": "InstanceCrashing",
                    "message": "back-off restarting failed container",
                },
                {
                    "type": "Ready",
                    "status": "False",
                    "observedGeneration": 1,
                    "lastTransitionTime": CONDITION_TIME,
                    "reason": "InstanceCrashing",
                    "message": "back-off restarting failed container",
                },
                {
                    "type": "QuotaGranted",
                    "status": "Unknown",
                    "lastTransitionTime": "1970-01-01T00:00:00Z",
                    "reason": "PendingEvaluation",
                    "message": "Waiting for quota evaluation",
                },
            ],
            "networkInterfaces": [{"assignments": {"networkIP": "10.128.0.7", "externalIP": "203.0.113.7"}}],
            "controller": {"observedTemplateHash": "7d9f8c6b5a"},
        },
    }


def workload() -> dict[str, Any]:
    return {
        "apiVersion": "compute.datumapis.com/v1alpha",
        "kind": "Workload",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "uid": "5b1c3a2e-0000-4000-8000-000000000000",
            "resourceVersion": "4700",
            "generation": 1,
            "creationTimestamp": "2025-01-02T02:59:00Z",
            "finalizers": ["compute.datumapis.com/workload-controller"],
        },
        "spec": {
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": copy.deepcopy(TEMPLATE_SPEC)},
            "placements": [
                {
                    "name": "edge",
                    "cityCodes": ["DFW", "LHR"],
                    "scaleSettings": {"minReplicas": 2, "instanceManagementPolicy": "OrderedReady"},
                }
            ],
        },
        "status": {
            "conditions": [
                {
                    "type": "Available",
                    "status": "True",
                    "observedGeneration": 1,
                    "lastTransitionTime": CONDITION_TIME,
                    "reason": "StableInstanceFound",
                    "message": "",
                }
            ],
            "deployments": 2,
            "replicas": 4,
            "currentReplicas": 4,
            "desiredReplicas": 4,
            "readyReplicas": 3,
            "placements": [
                {
                    "name": "edge",
                    "replicas": 4,
                    "currentReplicas": 4,
                    "desiredReplicas": 4,
                    "readyReplicas": 3,
                }
            ],
        },
    }


def cluster_profile() -> dict[str, Any]:
    return {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "metadata": {
            "name": "web",
            "namespace": "federation-system",
            "uid": "5b1c3a2e-0000-4000-8000-0000000000aa",
            "resourceVersion": "17",
            "generation": 1,
            "creationTimestamp": "2025-01-01T00:00:00Z",
            "labels": {
                "compute.datumapis.com/cluster-role": "project",
                "meta.datumapis.com/upstream-cluster-name": "cluster-acme_web",
                "x-k8s.io/cluster-manager": "federation-manager",
            },
        },
        "spec": {"displayName": "acme/web", "clusterManager": {"name": "federation-manager"}},
        "status": {
            "conditions": [
                {
                    "type": "ControlPlaneHealthy",
                    "status": "True",
                    "lastTransitionTime": CONDITION_TIME,
                    "reason": "Healthy",
                    "message": "",
                }
            ],
            "version": {"kubernetes": "v1.32.0"},
            "properties": [{"name": "location", "value": "dfw", "lastObservedTime": CONDITION_TIME}],
            "credentialProviders": [
                {
                    "name": "secretreader",
                    "cluster": {
                        "server": "https://web.projects.example.net:6443",
                        "certificate-authority-data": "LS0tLS1CRUdJTi0tLS0t",
                        "tls-server-name": "web.projects.example.net",
                        "extensions": [{"name": "client.authentication.k8s.io/exec", "extension": {"audience": "x"}}],
                    },
                }
            ],
        },
    }
