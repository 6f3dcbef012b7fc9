"""federation-manager: places WorkloadDeployments on cells by city code and projects
their status back to the project control planes."""

__version__ = "0.1.0"
