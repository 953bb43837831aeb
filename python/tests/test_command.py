"""The package's `tfm` command (its entry point, and `python -m tfm`) is the C++ command line: the
same output as the build's `tfm` (TFM_BIN), its errors and exit status, and one version
everywhere, CMake's project() line."""
import os
import re
import subprocess
import sys

import pytest

import tfm
from conftest import run


@pytest.fixture(scope="module")
def wheel_tfm():
    """The installed package's `tfm` script, beside this interpreter."""
    path = os.path.join(os.path.dirname(sys.executable), "tfm")
    if not os.access(path, os.X_OK):
        pytest.skip(f"no tfm script beside {sys.executable}")
    return path


def test_version_is_cmakes_everywhere(wheel_tfm, tfm_bin, source_dir):
    with open(os.path.join(source_dir, "CMakeLists.txt")) as f:
        version = re.search(r"project\([^)]*VERSION\s+([0-9.]+)", f.read()).group(1)
    assert tfm.__version__ == version
    assert re.fullmatch(r"[0-9a-f]{12}(-dirty)?|unknown", tfm.build_commit), tfm.build_commit
    for argv in ([wheel_tfm], [sys.executable, "-m", "tfm"]):
        first, cpu = run([*argv, "--version"]).splitlines()
        assert first == f"tfm {version} (commit {tfm.build_commit})"
        assert cpu.startswith("cpu: ")
    assert run([tfm_bin, "--version"]).startswith(f"tfm {version} (commit ")


def test_the_command_translates_as_the_cpp_command(wheel_tfm, tfm_bin, model_dir, lines):
    text = "".join(f"{line}\n" for line in lines)
    args = ["translate", "--model", model_dir, "--beam-size", "2"]
    assert run([wheel_tfm, *args], input=text) == run([tfm_bin, *args], input=text)


def test_errors_and_exit_status_are_the_commands(wheel_tfm, tmp_path):
    p = subprocess.run([wheel_tfm, "translate", "--model", str(tmp_path / "none")],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.startswith("tfm: error: ") and "does not exist" in p.stderr
    assert "Traceback" not in p.stderr
    p = subprocess.run([wheel_tfm, "no-such-command"], capture_output=True, text=True)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    usage = run([wheel_tfm, "--help"])
    assert "translate" in usage and "train" in usage


def test_a_closed_pipe_ends_the_command_quietly(wheel_tfm, model_dir, lines):
    """`tfm translate | head -1`: SIGPIPE ends it as it ends a C program (Python would ignore
    the signal and report a broken pipe)."""
    text = "".join(f"{line}\n" for line in lines * 1000)
    p = subprocess.run(f"'{wheel_tfm}' translate --model '{model_dir}' | head -n 1", shell=True,
                       input=text, capture_output=True, text=True)
    assert p.returncode == 0 and len(p.stdout.splitlines()) == 1
    assert "Traceback" not in p.stderr and "Broken pipe" not in p.stderr, p.stderr
