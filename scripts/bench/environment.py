"""What a run runs on: this checkout, the machine, spark-submit."""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Optional

SCRIPTS = Path(__file__).resolve().parent.parent
REPO = SCRIPTS.parent
# what the benchmark starts for a1 to a3 and s: `bench.py _score ...`, `bench.py _spark_floor`
BENCH_SCRIPT = SCRIPTS / "bench.py"


def machine_info() -> Dict[str, Any]:
    info: Dict[str, Any] = {"nproc": os.cpu_count(), "platform": platform.platform(),
                            "python": platform.python_version()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["mem_gib"] = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    from importlib import metadata

    for pkg in ("pyspark", "pyarrow", "sacrebleu", "bleuscore", "numpy", "psutil", "bleu-spark"):
        try:
            info[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            info[pkg] = None
    try:
        jv = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
        info["java"] = (jv.stderr or jv.stdout).splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        info["java"] = None
    return info


def git_describe(root: Path) -> Optional[str]:
    """HEAD's short hash, with '+dirty' when tracked files under root differ from it."""
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=30)
        if head.returncode != 0:
            marker = root / "COMMIT"
            return marker.read_text().strip() if marker.exists() else None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                "--untracked-files=no", "--", "bleu_spark", "jobs"],
                               capture_output=True, text=True, timeout=30).stdout.strip()
        return head.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def find_spark_submit() -> str:
    """spark-submit next to this Python, else the installed pyspark's, else PATH's."""
    here = Path(sys.executable).parent / "spark-submit"
    if here.exists():
        return str(here)
    try:
        from pyspark.find_spark_home import _find_spark_home

        cand = Path(_find_spark_home()) / "bin" / "spark-submit"
        if cand.exists():
            return str(cand)
    except Exception:  # noqa: BLE001 - any failure falls back to PATH
        pass
    return shutil.which("spark-submit") or "spark-submit"
