"""End to end: a second fresh copy of the project, run with 2 threads everywhere (OpenMP, MKL,
OpenBLAS, numba) instead of 1 and one simulate worker instead of one per core (``execution`` is no
tracked param), gives back the first copy's dvc.lock entries: every stage of the instances it
builds (``project.TWIN_INSTANCES``) and the personas and their embeddings, with every dependency,
param and output byte for byte (issue 28); and `dvc status` is clean in both. Built on one worker
while the first copy builds on the other. The cross-instance stages (overall, report) read a
different set of instances in the twin, so they are compared in the first copy's second repro
(test_outputs) instead."""

from __future__ import annotations

import pytest

from tests.e2e.project import TWIN_INSTANCES, dvc, lock_stages

pytestmark = pytest.mark.slow


def test_a_fresh_copy_with_other_thread_counts_and_one_worker_writes_the_same_dvc_lock(
    twin, project
):
    a, b = lock_stages(project), lock_stages(twin)
    shared = ["personas", "embed"] + [s for s in b if s.partition("@")[2] in TWIN_INSTANCES]
    assert len(shared) == 2 + 5 * len(TWIN_INSTANCES)  # simulate, metrics, stats, ratings, figures
    assert set(shared) <= set(a)
    assert [s for s in shared if a[s] != b[s]] == []
    outs = [o for s in shared for o in b[s].get("outs", [])]
    assert len(outs) > 30 and all(o["md5"] for o in outs)
    for copy in (project, twin):
        assert "up to date" in dvc(copy, "status").stdout
