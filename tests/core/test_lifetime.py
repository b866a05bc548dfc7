"""Issue 49: ``core.lifetime``, what keeps every child process from outliving its parent. Real
processes: a child started by ``lifetime.popen`` (from the main thread or a short-lived one) dies
when its parent is SIGKILLed, not when that thread ends (as a plain fork from it would); a child
whose parent is already gone ends at once; ``stop`` kills what ignores SIGINT; SIGTERM and SIGHUP
become ``KeyboardInterrupt`` inside ``terminate_as_interrupt`` and get their old handlers back
after it."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from marketarena.core import lifetime
from tests.processes import alive, python, wait_for

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG, /proc")

STARTER = """
import sys, threading, time
from marketarena.core import lifetime
cmd = ["sleep", "300"]
if sys.argv[1] == "thread":  # a thread that ends once the child is started
    started = []
    thread = threading.Thread(target=lambda: started.append(lifetime.popen(cmd)))
    thread.start()
    thread.join()
    child = started[0]
else:
    child = lifetime.popen(cmd)
print(child.pid, flush=True)
time.sleep(300)
"""


@linux
@pytest.mark.parametrize("where", ["main", "thread"])
def test_a_child_dies_with_its_killed_parent_and_not_with_the_thread_that_started_it(where):
    parent = python("-c", STARTER, where, stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        time.sleep(0.5)  # the starting thread has ended: the kernel would have signalled by now
        assert alive(child)
        parent.kill()
        parent.wait()
        wait_for(lambda: not alive(child), timeout_s=10, what=f"the child {child} to die")
    finally:
        parent.kill()
        parent.wait()


@linux
def test_the_kernel_ties_the_signal_to_the_forking_thread():
    """Why ``lifetime.popen`` forks in a lasting thread: a child given the parent-death signal by
    a plain Popen from a short-lived thread is killed when that thread ends."""
    started = []
    init = functools.partial(lifetime.die_with_parent, os.getpid())
    thread = threading.Thread(
        target=lambda: started.append(subprocess.Popen(["sleep", "300"], preexec_fn=init))
    )
    thread.start()
    thread.join()
    assert started[0].wait(timeout=10) == -signal.SIGKILL


def test_a_child_whose_parent_is_already_gone_ends_at_once():
    check = (
        "import os, sys; from marketarena.core.lifetime import die_with_parent; "
        "die_with_parent(int(sys.argv[1])); print('lived')"
    )
    gone = python("-c", check, "-1", stdout=subprocess.PIPE, text=True)
    here = python("-c", check, str(os.getpid()), stdout=subprocess.PIPE, text=True)
    assert gone.communicate(timeout=60) == ("", None) and gone.returncode == 1
    assert here.communicate(timeout=60) == ("lived\n", None) and here.returncode == 0


def test_stop_kills_what_ignores_sigint():
    stubborn = python(
        "-c",
        "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(60)",
        stdout=subprocess.PIPE,
        text=True,
    )
    assert stubborn.stdout.readline() == "ready\n"
    started = time.monotonic()
    assert lifetime.stop(stubborn, timeout=0.5) == -signal.SIGKILL
    assert time.monotonic() - started < 10
    stubborn.stdout.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_a_child_hears_sigint_where_its_parent_ignores_it():
    """A shell script's background job starts with SIGINT ignored, and a child inherits that: the
    clean stop of a server (SIGINT) would end in a SIGKILL. ``popen``'s child hears it."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        child = lifetime.popen(["grep", "SigIgn", "/proc/self/status"], stdout=subprocess.PIPE)
        plain = subprocess.Popen(["grep", "SigIgn", "/proc/self/status"], stdout=subprocess.PIPE)
        ignored = [int(p.communicate(timeout=60)[0].split()[1], 16) for p in (child, plain)]
    finally:
        signal.signal(signal.SIGINT, previous)
    bit = 1 << (signal.SIGINT - 1)
    assert ignored[1] & bit and not ignored[0] & bit  # inherited by a plain child, not by ours


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=lambda sig: sig.name)
def test_sigterm_and_sighup_interrupt_as_ctrl_c_does_inside_the_block(sig):
    before = signal.getsignal(sig)
    with pytest.raises(KeyboardInterrupt, match=sig.name), lifetime.terminate_as_interrupt():
        os.kill(os.getpid(), sig)
        time.sleep(10)  # the handler raises here
    assert signal.getsignal(sig) is before
