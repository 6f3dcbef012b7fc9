"""Cell-mode controllers: WorkloadDeployment -> Instances -> Pods (arrive with later issues)."""
