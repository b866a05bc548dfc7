"""marketarena: a reproducible benchmark in which LLM agents and scripted baselines compete in
simulated markets. See README.md and shared/DESIGN.md.

Importing the package pins the numerical libraries' CPU code path (:func:`pin_cpu_path`), before
anything imports numpy or runs torch: every stage (``stages/*.py``) and the command line import
``marketarena`` first; :func:`check_numpy_pinned` refuses a simulation in a process that imported
numpy before it.
"""

from __future__ import annotations

import os
import platform
import sys

__version__ = "0.1.0"

#: numpy, OpenBLAS, MKL and torch choose their kernels by what the CPU offers (AVX2, AVX-512, Intel
#: or AMD), and kernels differ in the last bits of a float (summation order, FMA, their exp/log).
#: On every x86-64 CPU with AVX2 and FMA these pin each library to its AVX2 path, so CPUs of
#: different kinds (AVX-512 or not, Intel or AMD) run the same kernels and write the same bytes.
#: A variable already set in the environment is left as it is.
PINNED_CPU_PATH = {
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",  # numpy: no AVX-512 loops
    "OPENBLAS_CORETYPE": "Haswell",  # numpy's and scipy's OpenBLAS: its AVX2 kernels
    "MKL_CBWR": "AVX2",  # torch's MKL: the AVX2 branch, conditional numerical reproducibility
    "ATEN_CPU_CAPABILITY": "avx2",  # torch's own vectorised kernels
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # torch's oneDNN (its linear layers): no AVX-512 JIT kernels
}


#: OpenBLAS (numpy's and scipy's) on one thread, on every machine: a run's parallelism is its
#: worker processes (one per core), and the matrices here are small. With a thread per core,
#: OpenBLAS's threads busy-wait after every call: during an LLM supply_chain episode (one
#: similarity product per retail step) its second thread burnt 0.55 s of CPU in 9.5 s, on a
#: 2-core machine the core the endpoint and the event loop needed. Threads split a product's
#: rows, not its sums, so the numbers are the same; an already set variable is left as it is.
SINGLE_THREADED = {"OPENBLAS_NUM_THREADS": "1"}


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def pin_cpu_path() -> dict[str, str]:
    """Set :data:`PINNED_CPU_PATH` in the environment (where unset) on an x86-64 CPU with AVX2 and
    FMA; returns what is in force (empty elsewhere: other CPUs keep their libraries' own choice).
    It takes effect for numpy and OpenBLAS only if they are imported after it, for torch before
    its first operation."""
    if platform.machine().lower() not in ("x86_64", "amd64") or not {"avx2", "fma"} <= _cpu_flags():
        return {}
    for key, value in PINNED_CPU_PATH.items():
        os.environ.setdefault(key, value)
    return {key: os.environ[key] for key in PINNED_CPU_PATH}


def check_numpy_pinned() -> None:
    """Raise if numpy runs loops that the pinned path disables: it was imported before
    marketarena (a script or notebook that imports numpy first), so floats written now could differ
    in the last bits from the pipeline's. Called before a simulation writes logs (and in each of
    its worker processes and Ray tasks); nothing to check where nothing is pinned or numpy is not
    loaded."""
    disabled = pin_cpu_path().get("NPY_DISABLE_CPU_FEATURES", "").split()
    numpy = sys.modules.get("numpy")
    if not disabled or numpy is None:
        return
    features = numpy._core._multiarray_umath.__cpu_features__
    running = [f for f in disabled if features.get(f)]
    if running:
        raise RuntimeError(
            f"numpy runs its {' '.join(running)} loops although NPY_DISABLE_CPU_FEATURES "
            f"disables them: numpy was imported before marketarena, so the logs would depend on "
            f"the CPU. Import marketarena before numpy (or anything that imports it); in a Ray "
            f"worker, start its node with the variables of marketarena.PINNED_CPU_PATH set."
        )


pin_cpu_path()
for _key, _value in SINGLE_THREADED.items():
    os.environ.setdefault(_key, _value)
