"""The federator's placement of one copy (federation/controllers/copyplacement.py): a table
of named cases, and a hypothesis simulation of a cell that takes each write (or a pass that
finds it half done), converging in at most three writes and writing nothing at rest."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from federation.controllers.copyplacement import (
    DELETING_NAMESPACE,
    FOREIGN_NAMESPACE,
    Action,
    ApplyNamespace,
    Blocked,
    CopyState,
    CreateCopy,
    Done,
    NamespaceState,
    Observed,
    SetInitialReplicas,
    UpdateCopy,
    next_action,
)

NS, COPY = NamespaceState, CopyState
AT_REST = Observed(NS.CURRENT, COPY.CURRENT, replicas_set=True)


@pytest.mark.parametrize(
    ("observed", "action"),
    [
        pytest.param(AT_REST, Done(), id="at-rest-nothing"),
        pytest.param(Observed(NS.MISSING, COPY.MISSING), ApplyNamespace(), id="new-cell-namespace-first"),
        pytest.param(Observed(NS.DIFFERS, COPY.CURRENT), ApplyNamespace(), id="namespace-drifted-is-restored"),
        pytest.param(Observed(NS.FOREIGN, COPY.MISSING), Blocked(FOREIGN_NAMESPACE), id="foreign-namespace-blocks"),
        pytest.param(Observed(NS.FOREIGN, COPY.DIFFERS), Blocked(FOREIGN_NAMESPACE), id="foreign-blocks-even-a-copy"),
        pytest.param(Observed(NS.DELETING, COPY.MISSING), Blocked(DELETING_NAMESPACE), id="deleting-namespace-waits"),
        pytest.param(Observed(NS.CURRENT, COPY.MISSING), CreateCopy(), id="missing-copy-is-created"),
        pytest.param(Observed(NS.CURRENT, COPY.DIFFERS), UpdateCopy(), id="drifted-copy-is-updated"),
        pytest.param(
            Observed(NS.CURRENT, COPY.DIFFERS, autoscaled=True, created=True),
            UpdateCopy(),
            id="the-spec-before-initial-replicas",
        ),
        pytest.param(
            Observed(NS.CURRENT, COPY.CURRENT, autoscaled=True, created=True),
            SetInitialReplicas(),
            id="created-autoscaled-copy-gets-initial-replicas",
        ),
        pytest.param(
            Observed(NS.CURRENT, COPY.CURRENT, autoscaled=True, created=True, replicas_set=True),
            Done(),
            id="initial-replicas-once",
        ),
        pytest.param(
            Observed(NS.CURRENT, COPY.CURRENT, autoscaled=True),
            Done(),
            id="an-existing-autoscaled-copy-keeps-the-cells-count",
        ),
        pytest.param(
            Observed(NS.CURRENT, COPY.CURRENT, created=True),
            Done(),
            id="not-autoscaled-replicas-ride-with-the-spec",
        ),
    ],
)
def test_next_action(observed: Observed, action: Action) -> None:
    assert next_action(observed) == action


def _take(observed: Observed, action: Action) -> Observed:
    """A cell that takes the write as intended (what the server returns is then current)."""
    if isinstance(action, ApplyNamespace):
        return replace(observed, namespace=NS.CURRENT)
    if isinstance(action, CreateCopy):
        return replace(observed, copy=COPY.CURRENT, created=True, replicas_set=not observed.autoscaled)
    if isinstance(action, UpdateCopy):
        return replace(observed, copy=COPY.CURRENT)
    if isinstance(action, SetInitialReplicas):
        return replace(observed, replicas_set=True)
    raise AssertionError(f"{action} writes nothing")


observations = st.builds(
    Observed,
    namespace=st.sampled_from(NamespaceState),
    copy=st.sampled_from(CopyState),
    autoscaled=st.booleans(),
    replicas_set=st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(start=observations)
def test_a_pass_converges_one_write_per_action(start: Observed) -> None:
    """From any observation a pass ends in Done or Blocked after at most three writes, none
    repeated; Blocked only on a namespace that is not ours to write; a copy that exists is
    never created, and only a copy this pass created gets initial replicas."""
    observed, writes = start, []
    while not isinstance(action := next_action(observed), Done | Blocked):
        assert action not in writes, f"{action} twice from {start}"
        writes.append(action)
        observed = _take(observed, action)
    assert len(writes) <= 3
    assert isinstance(action, Blocked) == (start.namespace in (NS.FOREIGN, NS.DELETING))
    if isinstance(action, Blocked):
        assert writes == []
    assert (CreateCopy() in writes) == (start.copy is COPY.MISSING and not isinstance(action, Blocked))
    assert (SetInitialReplicas() in writes) == (CreateCopy() in writes and start.autoscaled)
    assert (ApplyNamespace() in writes) == (start.namespace in (NS.MISSING, NS.DIFFERS))
    if start.namespace is NS.CURRENT and start.copy is COPY.CURRENT:
        assert writes == []  # at rest: no request
