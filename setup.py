"""Builds the wheel with its kernels compiled (docs/internals.md, "Compiled kernels"): after the
package's files are laid out in the build folder, `bleu_spark.build_kernels` compiles every
kernel there, for a generic CPU of this machine's target, into `bleu_spark/_kernels/`. Editable
installs skip it (their kernels compile at first use and are cached next to the source). If it
fails, the wheel is built without them and the kernels compile at first use, as numba does."""
import os
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py


class build_py_with_kernels(build_py):
    def run(self):
        super().run()
        if self.editable_mode or os.environ.get("BLEU_SPARK_SKIP_KERNELS") == "1":
            return
        # The build folder first on the path; pip's isolated build environment reaches its
        # packages through PYTHONPATH too, so it is kept.
        path = os.pathsep.join(p for p in (os.path.abspath(self.build_lib),
                                           os.environ.get("PYTHONPATH")) if p)
        env = dict(os.environ, BLEU_SPARK_BUILD_KERNELS="1", NUMBA_CPU_NAME="generic",
                   PYTHONPATH=path)
        env.pop("NUMBA_CPU_FEATURES", None)  # generic means the target's baseline features
        env.pop("NUMBA_DISABLE_JIT", None)
        done = subprocess.run([sys.executable, "-m", "bleu_spark.build_kernels"], env=env,
                              cwd=self.build_lib)
        if done.returncode:
            print("setup.py: compiling the kernels failed; they will compile at first use",
                  file=sys.stderr)


setup(cmdclass={"build_py": build_py_with_kernels})
