"""This machine in the words a stored result keeps: processor, cores, and the folder name
of its results (``python benchmarks/suite/machine.py`` prints it for ``make bench``)."""

from __future__ import annotations

import os
import platform
import re


def processor() -> str:
    """The processor's model name (``/proc/cpuinfo``), else what ``platform`` says."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cores() -> dict[str, int]:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {"cores": os.cpu_count() or 0, "usable_cores": usable or os.cpu_count() or 0}


def label() -> str:
    """A folder name per machine: the processor's model and the usable cores."""
    model = re.sub(r"\((r|tm)\)|cpu|processor|@.*$", " ", processor(), flags=re.I)
    slug = re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-")
    return f"{slug}-{cores()['usable_cores']}c"


if __name__ == "__main__":
    print(label())
