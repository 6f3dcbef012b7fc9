#!/usr/bin/env bash
# The walk-through on real clusters, for machines with Docker and kind (not part of CI):
# a management cluster that is also the project control plane "web" (org "acme"), and two
# cells (DFW, LHR). Builds and loads the image, deploys the overlays, registers the cells
# and the project with ClusterProfiles + kubeconfig Secrets, then runs the README's
# walk-through (e2e/walkthrough.py, the same function tests/e2e runs on embedded servers).
#   ./taskw e2e:kind            (KEEP=1 keeps the clusters afterwards)
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1 || { echo "e2e:kind: '$1' is not installed; $2" >&2; exit 2; }; }
need docker "install Docker (https://docs.docker.com/engine/install/)"
need kind "install kind (https://kind.sigs.k8s.io/docs/user/quick-start/#installation)"
need kubectl "install kubectl"
if ! docker info >/dev/null 2>&1; then
  echo "e2e:kind: no Docker engine is running here ('docker info' failed); this path needs one. The same" >&2
  echo "scenario runs on embedded API servers in the test suite (tests/e2e) without Docker." >&2
  exit 2
fi

IMAGE=federation-manager:e2e
MGMT=fm-management
CELLS=("fm-dfw:DFW:overlays/cell-dfw" "fm-lhr:LHR:overlays/cell-lhr")
PY=.venv/bin/python
work=$(mktemp -d)
cleanup() { [ "${KEEP:-}" = 1 ] || kind delete clusters "$MGMT" fm-dfw fm-lhr >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }
k() { local ctx=$1; shift; kubectl --context "kind-$ctx" "$@"; }
deploy() {  # deploy <cluster> <overlay>: the overlay with the image under test
  kubectl kustomize "$2" | sed "s#image: federation-manager:0.1.0#image: $IMAGE#" | k "$1" apply --server-side -f -
}

step "build $IMAGE"
docker build -t "$IMAGE" .

step "create clusters"
for name in "$MGMT" fm-dfw fm-lhr; do
  kind get clusters 2>/dev/null | grep -qx "$name" || kind create cluster --name "$name" --wait 120s
  kind load docker-image "$IMAGE" --name "$name"
done

step "deploy the overlays"
deploy "$MGMT" overlays/management
k "$MGMT" apply --server-side -k config/crd/compute   # the management cluster is also project "web"
for spec in "${CELLS[@]}"; do
  IFS=: read -r name city overlay <<<"$spec"
  deploy "$name" "$overlay"
done

step "register the cells and the project (ClusterProfile + kubeconfig Secret)"
kind get kubeconfig --internal --name "$MGMT" >"$work/web.kubeconfig"
for spec in "${CELLS[@]}"; do
  IFS=: read -r name city overlay <<<"$spec"
  kind get kubeconfig --internal --name "$name" >"$work/$name.kubeconfig"
  # kind's admin credentials; bind the shipped federation-access role in real deployments
done
"$PY" - "$work" <<'PY' | k "$MGMT" apply --server-side -f -
import sys, pathlib, yaml
from federation.registration import cell_profile, kubeconfig_secret, project_profile
work = pathlib.Path(sys.argv[1])
docs = []
for name, city in (("fm-dfw", "DFW"), ("fm-lhr", "LHR")):
    docs += [kubeconfig_secret(name, yaml.safe_load((work / f"{name}.kubeconfig").read_text())), cell_profile(name, city)]
docs += [kubeconfig_secret("web", yaml.safe_load((work / "web.kubeconfig").read_text())), project_profile("acme/web")]
print(yaml.safe_dump_all(docs, sort_keys=False))
PY

step "wait for the managers"
k "$MGMT" -n federation-system rollout status deployment/federation-manager --timeout=180s
for spec in "${CELLS[@]}"; do
  IFS=: read -r name _ _ <<<"$spec"
  k "$name" -n federation-system rollout status deployment/federation-manager --timeout=180s
done

step "the walk-through: apply, land, roll, scale, delete an Instance, delete (as tests/e2e runs it)"
kind get kubeconfig --name "$MGMT" >"$work/web-external.kubeconfig"
kind get kubeconfig --name fm-dfw >"$work/fm-dfw-external.kubeconfig"
# (no --management: the registrations hold kind's in-cluster addresses, which `status` and
# `check` run from this host cannot reach)
"$PY" e2e/walkthrough.py --project "$work/web-external.kubeconfig" --cell "fm-dfw=$work/fm-dfw-external.kubeconfig"
echo "e2e:kind: passed"
