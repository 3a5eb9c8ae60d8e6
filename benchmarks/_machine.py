# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""What every benchmark prints first: the machine, its load and the versions."""

import os
import platform
from importlib import metadata


def package_version(name):
    """The installed version of a package, read from its metadata (no import)."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "?"


def cpu_model():
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return model


def print_machine(setting):
    """Print the platform, CPU, load average and versions, then ``setting``.

    Versions come from the installed metadata: importing numpy here would grow a
    parent process whose memory high-water mark its children can inherit.
    """
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",) * 3
    print(f"machine: {platform.platform()}, Python {platform.python_version()}")
    print(
        f"CPU: {cpu_model()}; {os.cpu_count()} CPUs ({usable} usable); "
        f"load average {' '.join(f'{x:.2f}' for x in load)}"
    )
    print(
        f"numpy {package_version('numpy')}, rankmix {package_version('rankmix')}; "
        f"{setting}"
    )
