"""What every test directory shares: one bounded wait, embedded-server helpers, CRD
installation and a fleet (management + projects + cells) on embedded API servers."""

from .crds import WIDGET_CRD, install_crd, install_project_crds
from .fleet import Fleet, fleet
from .manager import all_idle, cell_settings, controller, management_settings, record, running
from .plane import Background, Plane, cluster_for, config_for, configmap, open_sockets
from .spies import calls_to
from .waiting import eventually

__all__ = [
    "WIDGET_CRD",
    "Background",
    "Fleet",
    "Plane",
    "all_idle",
    "calls_to",
    "cell_settings",
    "cluster_for",
    "config_for",
    "configmap",
    "controller",
    "eventually",
    "fleet",
    "install_crd",
    "install_project_crds",
    "management_settings",
    "open_sockets",
    "record",
    "running",
]
