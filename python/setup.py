"""Build of the onnxgrad Python package: the build_py step runs CMake on the repository root
(the parent folder of this one) to build libonnxgrad.so and copies it into the package, so
the installed package needs no path set by hand.  Metadata lives in pyproject.toml."""
import os
import shlex
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LIB = "libonnxgrad.so"


def _find_built(folder):
    path = os.path.join(folder, LIB)
    return os.path.realpath(path) if os.path.exists(path) else None


def build_library():
    """Path of a freshly built (or prebuilt) libonnxgrad.so."""
    prebuilt = os.environ.get("ONNXGRAD_PREBUILT")
    if prebuilt:
        lib = _find_built(prebuilt)
        if not lib:
            raise RuntimeError("ONNXGRAD_PREBUILT=%s holds no %s" % (prebuilt, LIB))
        return lib
    if not (os.path.exists(os.path.join(ROOT, "CMakeLists.txt")) and
            os.path.exists(os.path.join(ROOT, "include", "onnxgrad.h"))):
        raise RuntimeError(
            "onnxgrad: the C sources are not in %s; build the package from the repository "
            "(`pip install ./python` at its root) or set ONNXGRAD_PREBUILT to a folder holding "
            "a built %s" % (ROOT, LIB))
    cmake = shutil.which("cmake")
    if not cmake:
        raise RuntimeError("onnxgrad: cmake not found; run scripts/setup.sh, which installs "
                           "cmake and the C library's dependencies")
    build_dir = os.environ.get("ONNXGRAD_CMAKE_BUILD_DIR") or os.path.join(HERE, "build", "cmake")
    configure = [cmake, "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                 "-DBUILD_SHARED_LIBS=ON", "-DOG_BACKEND_TESTS=OFF"]
    configure += shlex.split(os.environ.get("ONNXGRAD_CMAKE_ARGS", ""))
    subprocess.check_call(configure)
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
    subprocess.check_call([cmake, "--build", build_dir, "--target", "onnxgrad", "-j", jobs])
    _build_mpi(cmake, build_dir, jobs)
    lib = _find_built(build_dir)
    if not lib:
        raise RuntimeError("onnxgrad: CMake finished but %s is not in %s" % (LIB, build_dir))
    return lib


def _build_mpi(cmake, build_dir, jobs):
    """libonnxgrad_mpi.so too (onnxgrad.parallel), when CMake found MPI: the target exists
    only then, and nothing fails without it."""
    if "OG_MPI_LIB:INTERNAL=ON" in open(os.path.join(build_dir, "CMakeCache.txt")).read():
        subprocess.call([cmake, "--build", build_dir, "--target", "onnxgrad_mpi", "-j", jobs])


def _copy_mpi(lib, package_dir):
    """Copy libonnxgrad_mpi.so from beside libonnxgrad.so into the package, if built."""
    mpi = os.path.join(os.path.dirname(lib), "libonnxgrad_mpi.so")
    if os.path.exists(mpi):
        dest = os.path.join(package_dir, "libonnxgrad_mpi.so")
        shutil.copyfile(os.path.realpath(mpi), dest)
        os.chmod(dest, 0o755)


class BuildPyWithLibrary(build_py):
    """build_py, then the C library copied into the package."""

    def run(self):
        super().run()
        lib = build_library()
        dest = os.path.join(self.build_lib, "onnxgrad", LIB)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        # one file (wheels do not keep symbolic links); the SONAME does not matter to ctypes
        shutil.copyfile(lib, dest)
        os.chmod(dest, 0o755)
        _copy_mpi(lib, os.path.dirname(dest))


class BinaryDistribution(Distribution):
    """The wheel holds a native library: tag it for this platform."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildPyWithLibrary}, distclass=BinaryDistribution)
