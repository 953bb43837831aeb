"""Builds tfm._tfm against an installed libtfm (`cmake --install build --prefix P`).

libtfm is found through pkg-config's tfm.pc, searched under $TFM_ROOT, then each entry of
$CMAKE_PREFIX_PATH, then pkg-config's own path. The static libtfm is linked into the extension
(it is built position-independent for this); its dependencies (oneDNN, SentencePiece, libyaml,
OpenMP, and the CUDA libraries when it was built with CUDA) come from `pkg-config --static`, with
an rpath for those outside the system's directories. The converter (../tools) is copied into
the package as tfm/_tools when building from the repository.
"""
import glob
import os
import shlex
import shutil
import subprocess

from pybind11.setup_helpers import Pybind11Extension, build_ext
from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = ("convert_pytorch.py", "reference_model.py", "safetensors_io.py")
SYSTEM_LIB_DIRS = {"/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/lib/x86_64-linux-gnu",
                   "/lib/x86_64-linux-gnu"}


def pkg_config_path():
    roots = [os.environ.get("TFM_ROOT", "")]
    roots += os.environ.get("CMAKE_PREFIX_PATH", "").split(os.pathsep)
    dirs = [os.path.join(r, lib, "pkgconfig") for r in roots if r for lib in ("lib", "lib64")]
    dirs = [d for d in dirs if os.path.isdir(d)]
    if os.environ.get("PKG_CONFIG_PATH"):
        dirs.append(os.environ["PKG_CONFIG_PATH"])
    return os.pathsep.join(dirs)


def tfm_flags():
    env = dict(os.environ, PKG_CONFIG_PATH=pkg_config_path())
    try:
        def run(*args):
            return shlex.split(subprocess.check_output(["pkg-config", *args, "tfm"], env=env,
                                                       text=True))
        cflags, libs = run("--cflags"), run("--libs", "--static")
        prefix = run("--variable=prefix")[0]
        version = run("--modversion")[0]
    except (OSError, subprocess.CalledProcessError):
        raise SystemExit(
            "tfm python: libtfm not found. Install it (cmake --install build --prefix P) and "
            "set TFM_ROOT=P or CMAKE_PREFIX_PATH=P (pkg-config must find P/lib/pkgconfig/tfm.pc)")
    rpaths = []
    for flag in libs:
        d = flag[2:] if flag.startswith("-L") else None
        if d and os.path.realpath(d) not in SYSTEM_LIB_DIRS and d not in rpaths:
            rpaths.append(d)
    # libtfm's symbols stay inside the extension (another copy elsewhere cannot clash).
    # Rebuilt when libtfm or its headers change, not only module.cpp (libtfm is linked in).
    depends = glob.glob(os.path.join(prefix, "lib*", "libtfm.*"))
    depends += glob.glob(os.path.join(prefix, "include", "tfm", "*.h"))
    depends.append(os.path.join(HERE, "src", "bindings.h"))
    return (cflags, libs + ["-Wl,--exclude-libs,ALL"] + [f"-Wl,-rpath,{d}" for d in rpaths],
            depends, version)


def copy_tools():
    """The converter from the repository's tools/ into tfm/_tools (before setuptools looks for
    the packages, so at import)."""
    src = os.path.join(HERE, "..", "tools")
    dst = os.path.join(HERE, "tfm", "_tools")
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(dst, "__init__.py"), "w") as f:
        f.write('"""A copy of the repository\'s tools/ converter (tfm.convert runs it)."""\n')
    for name in TOOLS:
        if os.path.isfile(os.path.join(src, name)):
            shutil.copyfile(os.path.join(src, name), os.path.join(dst, name))


copy_tools()
cflags, libs, depends, version = tfm_flags()
# The package's version is libtfm's: one number, CMake's project VERSION (through tfm.pc).
ext = Pybind11Extension("tfm._tfm", ["src/module.cpp", "src/trainer.cpp"], cxx_std=20, depends=depends,
                        extra_compile_args=cflags, extra_link_args=libs,
                        define_macros=[("TFM_VERSION", f'"{version}"')])
setup(version=version, ext_modules=[ext], cmdclass={"build_ext": build_ext})
