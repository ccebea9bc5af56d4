"""Timing helper shared by the benchmark scripts."""

import time


def best_of(func, repeat=3):
    """Smallest wall time of ``repeat`` calls, and the last call's result."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return min(times), result
