"""Where a comparison's sides run and where its results go, when not on this machine:
each side on a node of a Ray cluster (``--cluster``), the results published at a URL
(``--out s3://...``) and named there in the verdict."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from parity.errors import OptionError
from parity.model.placement import ClusterPlan
from parity.model.spec import SideSpec, WorkloadSpec
from parity.model.verdict import Verdict
from parity.storage import check_destination, is_url, shown

if TYPE_CHECKING:
    from parity.cluster.sides import RemoteSide


def url_out(out: str | None, resuming: bool = False) -> str | None:
    """``--out`` when it is a URL, its store checked before anything runs."""
    if out is None or not is_url(out):
        return None
    if resuming:
        raise OptionError(f"--resume takes a local directory, not {shown(out)}")
    check_destination(out)
    return out


def resume_target(resume: str | Path) -> tuple[Path, str | None]:
    """``--resume``'s directory, and the URL it was published to: a URL's run (committed,
    or the bundles a run still under way had uploaded) copied here to finish, then
    published there again."""
    from parity.safety.urls import checked

    text = checked(str(resume), "--resume")  # no credentials, query or fragment
    if not is_url(text):
        return Path(text), None
    from parity.storage import fetch_unfinished

    return fetch_unfinished(text), shown(text)


@contextmanager
def placed_sides(
    cluster: ClusterPlan | None,
    roles: Mapping[str, SideSpec],
    workload: WorkloadSpec | None = None,
) -> Iterator[dict[str, RemoteSide]]:
    """Each role's actor on its cluster node, for the comparison's (or run's) time (none
    without ``--cluster``): the cluster reached and its resources checked before anything
    runs, and a user's workload file sent with the jobs (``parity.cluster.code``)."""
    if cluster is None:
        yield {}
        return
    from parity.cluster.sides import start

    sides = start(cluster, roles, workload)
    try:
        yield dict(sides)
    finally:
        for side in sides.values():
            side.close()


def relocated(verdict: Verdict, where: dict[str, str]) -> Verdict:
    """The verdict with each side in ``where`` named by the URL it is read from."""
    sides = verdict.sides
    for role, url in where.items():
        sides = replace(sides, **{role: replace(getattr(sides, role), bundle=url)})
    return replace(verdict, sides=sides) if where else verdict
