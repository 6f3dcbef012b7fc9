"""The upstream-cluster-name label value (`meta.datumapis.com/upstream-cluster-name`).

A project is addressed two ways: by its path `<org>/<project>` (where it lives in the
organisation tree) and by its bare project name (the cluster name every request to the
manager carries). The label keeps the path, with `/` turned into `_` because `/` is not
allowed in label values, behind a `cluster-` prefix:

    encode("acme/web")          == "cluster-acme_web"
    decode("cluster-acme_web")  == "web"
    decode("cluster-datum-cloud") == "datum-cloud"     (a path of one segment)

Segments must be DNS-1123 labels, which cannot contain `_`, so the encoding is unambiguous.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

PREFIX = "cluster-"
_SEGMENT = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_MAX_SEGMENT = 63
_MAX_LABEL_VALUE = 63


@dataclass(frozen=True)
class ProjectPath:
    """A project's place in the organisation tree; `org` is None for a single-segment path."""

    org: str | None
    project: str

    def __str__(self) -> str:
        return self.project if self.org is None else f"{self.org}/{self.project}"


def _check_segments(segments: list[str], value: str, what: str) -> None:
    if not 1 <= len(segments) <= 2:
        raise ValueError(f"{what} {value!r}: expected <project> or <org>/<project>, got {len(segments)} segments")
    for seg in segments:
        if len(seg) > _MAX_SEGMENT or not _SEGMENT.match(seg):
            raise ValueError(
                f"{what} {value!r}: segment {seg!r} is not a DNS-1123 label "
                "(lowercase letters, digits and '-', starting and ending alphanumeric, at most 63 characters)"
            )


def encode_upstream_cluster_name(project_path: str) -> str:
    """`acme/web` → `cluster-acme_web`; `datum-cloud` → `cluster-datum-cloud`."""
    if not isinstance(project_path, str) or not project_path:
        raise ValueError(f"project path {project_path!r}: must be a non-empty string like 'org/project'")
    segments = project_path.split("/")
    _check_segments(segments, project_path, "project path")
    encoded = PREFIX + "_".join(segments)
    if len(encoded) > _MAX_LABEL_VALUE:
        raise ValueError(
            f"project path {project_path!r}: encoded label value {encoded!r} "
            f"is longer than {_MAX_LABEL_VALUE} characters"
        )
    return encoded


def parse_upstream_cluster_name(value: str) -> ProjectPath:
    """`cluster-acme_web` → ProjectPath(org="acme", project="web")."""
    if not isinstance(value, str) or not value.startswith(PREFIX):
        raise ValueError(f"upstream cluster name {value!r}: must start with {PREFIX!r}")
    body = value[len(PREFIX) :]
    if not body:
        raise ValueError(f"upstream cluster name {value!r}: nothing after {PREFIX!r}")
    segments = body.split("_")
    _check_segments(segments, value, "upstream cluster name")
    if len(segments) == 1:
        return ProjectPath(None, segments[0])
    return ProjectPath(segments[0], segments[1])


@lru_cache(maxsize=1024)
def decode_upstream_cluster_name(value: str) -> str:
    """`cluster-acme_web` → `web` (the bare project name, i.e. the cluster name).
    Remembered: every cell event is mapped back through it, and a fleet has few projects."""
    return parse_upstream_cluster_name(value).project
