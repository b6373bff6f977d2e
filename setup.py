"""Builds the wheel with its kernels compiled (docs/internals.md, "Compiled kernels"): after the
package's files are laid out in the build folder, `bleu_spark.build_kernels` compiles every
kernel there, for the CPUs of `bleu_spark.compiled.BUILT_CPUS`, into `bleu_spark/_kernels/`. Editable
installs skip it (their kernels compile at first use and are cached next to the source). If it
fails, the wheel is built without them and the kernels compile at first use, as numba does."""
import os
import platform
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py


class build_py_with_kernels(build_py):
    def run(self):
        super().run()
        if self.editable_mode:
            return
        # An earlier build's kernels in the same build folder (setuptools keeps build/lib) would
        # go into this wheel too: every build starts from none.
        shutil.rmtree(os.path.join(self.build_lib, "bleu_spark", "_kernels"), ignore_errors=True)
        if os.environ.get("BLEU_SPARK_SKIP_KERNELS") == "1":
            return
        # The build folder first on the path; pip's isolated build environment reaches its
        # packages through PYTHONPATH too, so it is kept.
        path = os.pathsep.join(p for p in (os.path.abspath(self.build_lib),
                                           os.environ.get("PYTHONPATH")) if p)
        # The CPUs of bleu_spark.compiled.BUILT_CPUS this target has: each machine loads the
        # best it runs. Empty features: the CPU's name alone says what the code may use.
        x86 = platform.machine().lower() in ("x86_64", "amd64")
        for cpu in (["x86-64-v3"] if x86 else []) + ["generic"]:
            env = dict(os.environ, BLEU_SPARK_BUILD_KERNELS="1", NUMBA_CPU_NAME=cpu,
                       NUMBA_CPU_FEATURES="", PYTHONPATH=path)
            # The kernels as a run compiles them by default, into the wheel's own folder.
            for name in ("NUMBA_DISABLE_JIT", "NUMBA_BOUNDSCHECK", "NUMBA_OPT", "NUMBA_DEBUGINFO",
                         "BLEU_SPARK_KERNELS_DIR", "BLEU_SPARK_PURE_PYTHON"):
                env.pop(name, None)
            done = subprocess.run([sys.executable, "-m", "bleu_spark.build_kernels"], env=env,
                                  cwd=self.build_lib)
            if done.returncode:
                print(f"setup.py: compiling the kernels for {cpu} failed; where no built kernel "
                      f"fits, they compile at first use", file=sys.stderr)


setup(cmdclass={"build_py": build_py_with_kernels})
