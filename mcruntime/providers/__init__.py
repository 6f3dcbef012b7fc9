"""Cluster providers: where the manager learns which clusters to serve."""

from .base import ClusterHost, Provider
from .clusterprofile import ClusterProfileProvider
from .kubeconfig_dir import KubeconfigDirProvider
from .secrets import KubeconfigSecretProvider

__all__ = ["ClusterHost", "ClusterProfileProvider", "KubeconfigDirProvider", "KubeconfigSecretProvider", "Provider"]
