"""Whole-process measurement: wall time, CPU seconds and peak memory of a process tree, and
py-spy on the job's Python workers."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence


def _classify(cmdline: List[str], name: str) -> str:
    exe = os.path.basename(cmdline[0]) if cmdline else name
    joined = " ".join(cmdline)
    if exe == "java" or name == "java":
        # spark-class first runs a small launcher JVM that only prints the real command
        return "launcher" if "org.apache.spark.launcher.Main" in joined else "jvm"
    if "python" in exe or "python" in name:
        if "pyspark.daemon" in joined or "pyspark.worker" in joined or "pyspark/daemon" in joined:
            return "py_worker"
        return "py_driver"
    return "other"


class TreeMonitor:
    """Polls a process tree: peak RSS per kind of process, CPU seconds, process counts."""

    def __init__(self, pid: int, interval: float = 0.1, on_new=None):
        try:
            import psutil
        except ImportError:  # memory is then not reported; timings and the guard still run
            psutil = None
        self.psutil = psutil
        self.root = psutil.Process(pid) if psutil else None
        self.interval = interval
        self.on_new = on_new
        self.kinds: Dict[int, str] = {}
        self.names: Dict[int, str] = {}
        self.cpu: Dict[int, float] = {}
        self.peak_sum: Dict[str, int] = {}
        self.peak_one: Dict[str, int] = {}
        self.peak_total = 0
        self.max_procs: Dict[str, int] = {}
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        if self.psutil:
            self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self.psutil:
            self._thread.join()

    def _run(self):
        ps = self.psutil
        while not self._stop.is_set():
            try:
                procs = [self.root] + self.root.children(recursive=True)
            except ps.Error:
                break
            sums: Dict[str, int] = {}
            counts: Dict[str, int] = {}
            total = 0
            for p in procs:
                try:
                    with p.oneshot():
                        name = p.name()
                        # spark-submit's bash execs java: same pid, new program
                        if self.names.get(p.pid) != name:
                            # the kind first: a process gone before its cmdline is read is
                            # seen anew at the next poll, never named without a kind
                            self.kinds[p.pid] = _classify(p.cmdline(), name)
                            self.names[p.pid] = name
                            if self.on_new:
                                self.on_new(p.pid, self.kinds[p.pid], p)
                        kind = self.kinds[p.pid]
                        rss = p.memory_info().rss
                        t = p.cpu_times()
                        self.cpu[p.pid] = t.user + t.system
                except ps.Error:
                    continue
                sums[kind] = sums.get(kind, 0) + rss
                counts[kind] = counts.get(kind, 0) + 1
                self.peak_one[kind] = max(self.peak_one.get(kind, 0), rss)
                total += rss
            for kind, v in sums.items():
                self.peak_sum[kind] = max(self.peak_sum.get(kind, 0), v)
                self.max_procs[kind] = max(self.max_procs.get(kind, 0), counts[kind])
            self.peak_total = max(self.peak_total, total)
            self.samples += 1
            self._stop.wait(self.interval)

    def report(self) -> Dict[str, Any]:
        cpu_by_kind: Dict[str, float] = {}
        for pid, c in self.cpu.items():
            k = self.kinds.get(pid, "other")
            cpu_by_kind[k] = cpu_by_kind.get(k, 0.0) + c
        mib = 1024 * 1024
        return {"peak_rss_mib": {k: round(v / mib, 1) for k, v in self.peak_sum.items()},
                "peak_rss_one_mib": {k: round(v / mib, 1) for k, v in self.peak_one.items()},
                "peak_rss_total_mib": round(self.peak_total / mib, 1),
                "max_processes": self.max_procs,
                "cpu_s": {k: round(v, 2) for k, v in cpu_by_kind.items()},
                "cpu_total_s": round(sum(cpu_by_kind.values()), 2),
                "samples": self.samples}


class PySpyAttacher:
    """Starts `py-spy record --subprocesses` on the first Python worker process seen."""

    def __init__(self, out_raw: Path, rate: int = 100):
        self.out_raw = out_raw
        self.rate = rate
        self.proc: Optional[subprocess.Popen] = None
        self.lock = threading.Lock()

    def __call__(self, pid, kind, p):
        if kind != "py_worker":
            return
        with self.lock:
            if self.proc is not None:
                return
            exe = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
            self.proc = subprocess.Popen(
                [exe, "record", "--pid", str(pid), "--subprocesses", "--format", "raw",
                 "--rate", str(self.rate), "--nonblocking", "-o", str(self.out_raw)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def finish(self, timeout=30) -> Optional[str]:
        if self.proc is None:
            return "no Python worker seen"
        try:
            _, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            _, err = self.proc.communicate()
        if not self.out_raw.exists():
            return (err or b"").decode(errors="replace")[-2000:]
        return None


def summarize_collapsed(raw_path: Path, top: int = 25) -> Dict[str, Any]:
    """Self and inclusive sample shares per function from py-spy's collapsed stacks."""
    self_c: Dict[str, int] = {}
    incl: Dict[str, int] = {}
    total = 0
    for line in raw_path.read_text(errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        n_i = int(n)
        # one entry per function: "name (file:line)" -> "name (file)"
        frames = [re.sub(r":\d+\)$", ")", f) for f in stack.split(";") if f]
        # drop the leading "process ..." frame added by --subprocesses
        if frames and frames[0].startswith("process "):
            frames = frames[1:]
        if not frames:
            continue
        total += n_i
        self_c[frames[-1]] = self_c.get(frames[-1], 0) + n_i
        for f in set(frames):
            incl[f] = incl.get(f, 0) + n_i
    def top_of(d):
        return [(k, round(100.0 * v / total, 1)) for k, v in
                sorted(d.items(), key=lambda kv: -kv[1])[:top]] if total else []
    return {"samples": total, "self_pct": top_of(self_c), "inclusive_pct": top_of(incl)}


def run_measured(cmd: Sequence[str], env: Dict[str, str], log_path: Path,
                 timeout: Optional[float] = None, on_new=None,
                 cwd: Optional[Path] = None) -> Dict[str, Any]:
    load_before = os.getloadavg()
    busy_before = _machine_busy_s()
    t0 = time.perf_counter()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(list(cmd), env=env, stdout=log, stderr=subprocess.STDOUT,
                                cwd=str(cwd) if cwd else None)
        mon = TreeMonitor(proc.pid, on_new=on_new).start()
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_tree(proc.pid)
            rc = proc.wait()
        wall = time.perf_counter() - t0
        mon.stop()
    out = {"cmd": list(cmd), "returncode": rc, "wall_s": round(wall, 3),
           "load_before": [round(x, 2) for x in load_before],
           "load_after": [round(x, 2) for x in os.getloadavg()], "log": str(log_path)}
    out.update(mon.report())
    busy_after = _machine_busy_s()
    if busy_before is not None and busy_after is not None:
        # CPU that other processes on the machine used meanwhile: the noise in this timing
        out["other_cpu_s"] = round(max(0.0, busy_after - busy_before - out.get("cpu_total_s", 0)), 1)
    return out


def _machine_busy_s() -> Optional[float]:
    try:
        import psutil
    except ImportError:
        return None
    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


def _kill_tree(pid: int) -> None:
    try:
        import psutil
    except ImportError:
        os.kill(pid, 9)
        return
    try:
        root = psutil.Process(pid)
        procs = root.children(recursive=True) + [root]
    except psutil.Error:
        return
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass
