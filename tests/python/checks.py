"""What the Python module's tests share: attn_tracer and NumPy imported, or the test skipped (exit 77,
which ctest reports as skipped), and the list of checks a test prints and counts."""
import sys


def import_module():
    """(numpy, attn_tracer), or exit 77 when either is not importable here."""
    try:
        import numpy
        import attn_tracer
    except ImportError as e:
        print(f"SKIPPED: attn_tracer or numpy is not importable here ({e}); build it with python3-dev and pybind11-dev (scripts/setup.sh)")
        sys.exit(77)
    return numpy, attn_tracer


failures = []


def check(ok, what):
    """Prints ok or FAIL with what was checked; a failure is counted."""
    print(f"  {'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def outcome():
    """The test's exit code, after a line that says how it went."""
    print(f"{len(failures)} failure(s)" if failures else "all passed")
    return 1 if failures else 0
