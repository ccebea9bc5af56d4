"""Timing helpers shared by the benchmark scripts.

One convention for every time a benchmark prints: the median (and min) of a
stated number of repeats, headed by the machine's core count and load, so a
reader can tell a slow machine from a slow change. A single run is printed as
such ("1 run"), never as if it were typical.
"""

import os
import statistics
import time
from typing import Any, NamedTuple


class Timing(NamedTuple):
    """Wall times of ``repeat`` calls of one function, and the last result."""

    median: float
    minimum: float
    repeat: int
    result: Any

    def __str__(self):
        return f"{_figures(self.median)} ({_figures(self.minimum)})"

    def ms(self):
        """The same figures in milliseconds."""
        return f"{_figures(1e3 * self.median)} ({_figures(1e3 * self.minimum)})"


def _figures(value):
    # Three significant figures, without an exponent for long runs.
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def timed(func, repeat=3, setup=None):
    """Call ``func`` ``repeat`` times; its median and min wall time, last result.

    With ``setup``, each call is ``func(setup())`` and only ``func`` is timed.
    """
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    times = []
    for _ in range(repeat):
        arguments = () if setup is None else (setup(),)
        start = time.perf_counter()
        result = func(*arguments)
        times.append(time.perf_counter() - start)
    return Timing(statistics.median(times), min(times), repeat, result)


def machine():
    """This machine's core count and 1-minute load average, as one phrase."""
    return f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}"


def header(repeat):
    """The line every benchmark prints before its times."""
    runs = "from 1 run" if repeat == 1 else f"the median (min) of {repeat} runs"
    return f"{machine()}; times in seconds, {runs}"


class Stopwatch:
    """The script's own run time: one run, said to be one."""

    def __init__(self):
        self.start = time.perf_counter()

    def __str__(self):
        seconds = time.perf_counter() - self.start
        return f"{seconds:.0f} s for this run of the script (1 run; {machine()})"
