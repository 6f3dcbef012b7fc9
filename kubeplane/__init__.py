"""kubeplane: an embedded Kubernetes control plane (API server plus the controllers the
federation relies on) for demos and tests on machines without a real cluster."""

from .server import ControlPlane, EmbeddedAPIServer

__all__ = ["ControlPlane", "EmbeddedAPIServer"]
