"""``freqlab.__main__``: the command line's entry point owns Ctrl-C and SIGTERM from its first line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

# An interrupt raised inside a weakref callback (as happens when Ctrl-C lands in the import system's module-lock
# callback) cannot propagate: Python reports it as "Exception ignored" and goes on. The entry point's hook must
# deliver the same signal again in the main flow.
SWALLOWED = """
import sys, time, weakref
import freqlab.__main__ as entry
from freqlab.errors import Terminated, exit_status
sys.unraisablehook = entry._redeliver
import signal
signal.signal(signal.SIGTERM, entry.terminate)

class Thing:
    pass

def callback(ref):
    raise {exception}

thing = Thing()
ref = weakref.ref(thing, callback)
try:
    del thing
    for _ in range(SLEEPS):  # short sleeps: the redelivered interrupt (no real signal) is raised between two
        time.sleep(0.1)      # (one sleep of 5 s failed once on a machine loaded past 4: the timer came too late)
    print("not interrupted")
except KeyboardInterrupt as interrupt:
    print(type(interrupt).__name__, exit_status(interrupt))
"""


@pytest.mark.parametrize(
    ("exception", "printed"), [("KeyboardInterrupt", "KeyboardInterrupt 130"), ("Terminated", "Terminated 143")]
)
def test_an_interrupt_swallowed_by_a_callback_is_delivered_again(exception, printed):
    code = SWALLOWED.format(exception=exception).replace("SLEEPS", "400")  # up to 40 s, ending at the interrupt
    # Ctrl-C as a terminal's process has it: a test run started in the background (`nohup ... &`) passes SIGINT
    # ignored to its children, and Python then leaves it ignored, so no interrupt could be delivered at all
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert result.stdout.strip() == printed
    assert "Exception ignored" not in result.stderr and "Traceback" not in result.stderr


def test_other_unraisable_errors_are_still_reported():
    code = SWALLOWED.format(exception="ValueError('kept')")
    result = subprocess.run(
        [sys.executable, "-c", code.replace("SLEEPS", "1")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.strip() == "not interrupted"
    assert "Exception ignored" in result.stderr and "ValueError: kept" in result.stderr


def test_an_interrupt_inside_a_compiled_call_is_still_an_interrupt():
    """numba hands a KeyboardInterrupt raised inside a compiled call back as a SystemError caused by it."""
    from freqlab.errors import Terminated, interrupt_of

    def wrapped(cause: BaseException) -> SystemError:
        try:
            raise SystemError("CPUDispatcher(<function pack_walk>) returned a result with an exception set") from cause
        except SystemError as error:
            return error

    assert isinstance(interrupt_of(wrapped(KeyboardInterrupt())), KeyboardInterrupt)
    assert isinstance(interrupt_of(wrapped(Terminated())), Terminated)
    assert interrupt_of(wrapped(ValueError())) is None and interrupt_of(SystemError("other")) is None


def test_an_interrupted_program_ends_within_the_grace_even_if_a_thread_never_does():
    """A non-daemon thread that never ends (as a process pool's manager thread can, waiting for the rest of a result
    its killed worker was sending) would hold the interpreter's exit forever; the entry point ends it at 130."""
    code = """
import sys, threading, time
import freqlab.cli, freqlab.__main__ as entry
stuck = threading.Event()
def never_ends():
    stuck.wait()
def command():
    threading.Thread(target=never_ends).start()
    sys.stderr.write("interrupted: (the command's own line)\\n")
    sys.exit(130)
freqlab.cli.main_entry = command
entry.run()
"""
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 130 and result.stderr == "interrupted: (the command's own line)\n"
    assert time.monotonic() - started < 30  # EXIT_GRACE (5 s) after the interrupt, plus start-up


def test_an_interrupt_click_turns_into_abort_keeps_its_exit_status(monkeypatch, capsys):
    """An interrupt outside the command itself (while click parses, or at start-up) reaches main_entry as click's
    Abort raised from it: SIGTERM still exits 143, Ctrl-C 130."""
    import click

    import freqlab.cli as cli
    from freqlab.errors import INTERRUPTED, TERMINATED, Terminated

    for interrupt, status in ((Terminated(), TERMINATED), (KeyboardInterrupt(), INTERRUPTED)):

        def aborted(standalone_mode, interrupt=interrupt):
            raise click.exceptions.Abort() from interrupt

        monkeypatch.setattr(cli, "main", aborted)
        with pytest.raises(SystemExit) as exited:
            cli.main_entry()
        assert exited.value.code == status
        assert capsys.readouterr().err == "\ninterrupted\n"


def test_a_second_interrupt_during_the_exit_waits_for_the_threads_still_running():
    """Ctrl-C pressed again while the program exits must not cut short its wait for a thread still running: one
    inside a backend's native build would be killed on its way back to Python, aborting the process."""
    import signal

    code = """
import sys, threading, time
import freqlab.cli, freqlab.__main__ as entry
def building():
    time.sleep(1.5)  # a native build, ending after the second Ctrl-C
    sys.stderr.write("built\\n")
def command():
    threading.Thread(target=building).start()
    print("exiting", flush=True)
    sys.exit(130)
freqlab.cli.main_entry = command
entry.run()
"""
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout.readline() == "exiting\n"
    time.sleep(0.5)  # inside the exit's wait for the thread
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130 and stderr == "built\n"


@pytest.mark.parametrize(("ending", "status"), [("return None", 0), ("sys.exit(1)", 1)])
def test_the_program_leaves_what_it_made_to_the_system_at_exit(ending, status):
    """However a command ends, its objects are frozen out of the cyclic collector's reach (Python's exit would pass
    over all of them: 0.2-0.3 s after a scan); atexit handlers and the flush of stdout still run."""
    code = f"""
import atexit, gc, sys
import freqlab.cli, freqlab.__main__ as entry
class Cycle:
    def __init__(self):
        self.me = self
made = [Cycle() for _ in range(1000)]
def command():
    sys.stdout.write("the command's output, unflushed")
    {ending}
freqlab.cli.main_entry = command
atexit.register(lambda: sys.stderr.write(f"frozen at exit: {{gc.get_freeze_count() >= 1000}}"))
entry.run()
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (
        status,
        "the command's output, unflushed",
        "frozen at exit: True",
    )


@pytest.mark.parametrize(
    ("command", "given", "seen"), [("scan", None, "4"), ("scan", "9", "9"), ("probe", None, "None")]
)
def test_the_program_lets_idle_blas_threads_sleep_before_numpy_loads(command, given, seen):
    """OpenBLAS's idle threads spin ~0.1 core-second after numpy's import unless told to sleep: the command sets
    ``OPENBLAS_THREAD_TIMEOUT`` to 4 (2^4 cycles) before anything imports numpy, and keeps a value the user gave;
    the scan's forkserver and workers inherit it. ``probe`` (a model, maybe on a torch built on OpenBLAS) is left
    alone."""
    code = """
import atexit, os, sys
class Watch:  # what the variable is when numpy is first imported (`scan --help` imports it)
    def find_spec(self, name, path=None, target=None):
        if name == "numpy":
            atexit.register(sys.stderr.write, f"at numpy's import: {os.environ.get('OPENBLAS_THREAD_TIMEOUT')}")
            sys.meta_path.remove(self)
sys.meta_path.insert(0, Watch())
sys.argv = ["freqlab", "COMMAND", "--help"]
import freqlab.__main__ as entry
assert "numpy" not in sys.modules
entry.run()
"""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    env.update({"OPENBLAS_THREAD_TIMEOUT": given} if given else {})
    code = code.replace("COMMAND", command)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert (result.returncode, result.stderr) == (0, f"at numpy's import: {seen}")


WARNS = """
import warnings
import freqlab.cli
import freqlab.apply.probe as inside
def command():
    code = "import warnings; warnings.warn('plan applied to an untested type', stacklevel=1)"
    exec(compile(code, inside.__file__, "exec"))  # as if raised in freqlab's own code
    warnings.warn("from elsewhere", DeprecationWarning, stacklevel=1)
freqlab.cli.main = lambda standalone_mode: command()
freqlab.cli.main_entry()
"""


def test_freqlabs_own_warnings_are_one_line_on_the_command_line():
    """A warning raised in freqlab's code (``--allow-untested``'s) is one line like its errors, not Python's file,
    line and source line; another package's warning keeps Python's form."""
    done = subprocess.run([sys.executable, "-W", "always", "-c", WARNS], capture_output=True, text=True, timeout=60)
    lines = done.stderr.splitlines()
    assert done.returncode == 0 and lines[0] == "Warning: plan applied to an untested type", done.stderr
    assert lines[1].endswith("DeprecationWarning: from elsewhere") and "<string>" in lines[1]
