"""The package's `tfm` command (its console-script entry point, and `python -m tfm`): the same
command line as the C++ program, compiled into the extension (tfm._tfm._run_cli), so that the
two cannot differ and the wheel holds one copy of the library. docs/cli.md documents it."""
import os
import signal
import sys


def main() -> int:
    from ._tfm import _run_cli

    # As a C program starts: Ctrl-C ends the command (Python's own handler only sets a flag that
    # no Python code looks at while the command runs; `tfm train` installs its own), and a
    # closed pipe (`tfm translate ... | head`) ends it quietly instead of raising write errors.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.stdout.flush()
    name = os.path.basename(sys.argv[0])
    return _run_cli([name if name and not name.endswith(".py") else "tfm", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
