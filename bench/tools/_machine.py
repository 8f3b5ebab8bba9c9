"""Machine and software description recorded with every benchmark result."""
from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
import sys


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total() -> str:
    try:
        return subprocess.run(["free", "-h"], capture_output=True, text=True,
                              check=True).stdout.splitlines()[1].split()[1]
    except Exception:
        return "unknown"


def _git_head() -> str:
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=here).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", ":(top)dpcore"], capture_output=True, text=True,
                               cwd=here).stdout.strip()
        return head + (" (dpcore/ has uncommitted changes)" if dirty else "")
    except Exception:
        return "unknown"


def machine() -> dict:
    import numpy
    import pandas
    return {
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "nproc": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "mem_total": _mem_total(),
        "python": sys.version.split()[0],
        "numpy": numpy.__version__,
        "pandas": pandas.__version__,
        "platform": platform.platform(),
        "git_head": _git_head(),
    }


def describe(m: dict) -> str:
    return (f"{m['date']} | nproc={m['nproc']} | CPU: {m['cpu_model']} | RAM {m['mem_total']} | "
            f"Python {m['python']}, numpy {m['numpy']}, pandas {m['pandas']} | git {m['git_head']}")
