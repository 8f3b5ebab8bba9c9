"""Long jobs of the studio (releases, sweeps) in a background thread, with progress, an
estimate of the time left, and cancellation.

A :class:`Job` runs ``work(job)`` in a daemon thread. The work reports progress with
:meth:`Job.report` and checks for cancellation with :meth:`Job.checkpoint` (which raises
:class:`Cancelled`) or reads :attr:`Job.cancel_event` (an ``is_set()`` object, as
:func:`dpcore.metrics.sweep` takes). The page that started the job only reads its state, so
the job goes on when the curator opens another page, and its result is there when they
come back. No Streamlit here (tests/test_architecture.py).

Privacy: a job only runs what it is given; a release cancelled before it returns has
produced no output (the budget book marks it aborted, :mod:`dpcore.studio.budget_book`), and
progress messages carry counts of finished steps, never data.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Cancelled", "Job", "start", "RUNNING", "DONE", "FAILED", "CANCELLED"]

RUNNING, DONE, FAILED, CANCELLED = "running", "done", "failed", "cancelled"


class Cancelled(Exception):
    """Raised by :meth:`Job.checkpoint` once the job's Cancel was asked for."""


@dataclass(eq=False)
class Job:
    """One background job. ``expected_seconds``: a prior estimate of its length (e.g. the last
    run of the same kind), used for the time left until the first step has finished."""

    name: str
    total: int = 1
    expected_seconds: float | None = None
    done: int = 0
    message: str = "starting …"
    state: str = RUNNING
    result: Any = None
    error: BaseException | None = None
    started: float = field(default_factory=time.monotonic)
    finished_at: float | None = None
    cancel_event: threading.Event = field(default_factory=threading.Event)
    info: dict = field(default_factory=dict)
    _thread: threading.Thread | None = None
    _first_step_at: float | None = None

    # ------------------------------------------------------------------ called by the work

    def report(self, done: int, total: int | None = None, message: str = "") -> None:
        """Progress: ``done`` of ``total`` steps finished (``message`` in plain words, no data)."""
        if total is not None:
            self.total = max(int(total), 1)
        self.done = max(0, min(int(done), self.total))
        if self.done > 0 and self._first_step_at is None:
            self._first_step_at = time.monotonic()
        if message:
            self.message = message

    def checkpoint(self) -> None:
        """Raise :class:`Cancelled` if the job was cancelled (call it between steps)."""
        if self.cancel_event.is_set():
            raise Cancelled(f"{self.name} cancelled")

    # ------------------------------------------------------------------ called by the page

    def cancel(self) -> None:
        """Ask the work to stop at its next checkpoint (a step in progress finishes first)."""
        self.cancel_event.set()

    @property
    def cancelling(self) -> bool:
        return self.cancel_event.is_set() and self.state == RUNNING

    @property
    def finished(self) -> bool:
        return self.state != RUNNING

    def elapsed(self) -> float:
        return (self.finished_at or time.monotonic()) - self.started

    def fraction(self) -> float:
        """Share done: finished steps, or (before the first step) the elapsed share of the prior estimate."""
        if self.finished:
            return 1.0
        if self.done:
            return self.done / self.total
        if self.expected_seconds:
            return min(0.95, self.elapsed() / self.expected_seconds) / self.total
        return 0.0

    def remaining(self) -> float | None:
        """Estimated seconds left: the rate of the finished steps, else the prior estimate; None if unknown."""
        if self.finished:
            return 0.0
        if self.done:
            rate = self.elapsed() / self.done
            return max(0.0, rate * (self.total - self.done))
        if self.expected_seconds:
            return max(0.0, self.expected_seconds - self.elapsed())
        return None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for the job; whether it has finished."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.finished

    def status_line(self) -> str:
        """'3/5 — set 3 of 5 … 4 s elapsed, about 3 s left' (plain words for the progress bar)."""
        left = self.remaining()
        est = ("estimating the time left" if left is None else
               f"about {_seconds(left)} left" if left >= 1 else "almost done")
        return f"{self.done}/{self.total} — {self.message} · {_seconds(self.elapsed())} elapsed, {est}"


def _seconds(s: float) -> str:
    return f"{s:.0f} s" if s < 90 else f"{s / 60:.1f} min"


def start(name: str, work: Callable[[Job], Any], total: int = 1, expected_seconds: float | None = None,
          info: dict | None = None) -> Job:
    """Run ``work(job)`` in a daemon thread and return the :class:`Job` at once.

    The job ends ``done`` with ``work``'s return value as ``result``, ``cancelled`` if it
    raised :class:`Cancelled`, else ``failed`` with the exception as ``error``."""
    job = Job(name, max(int(total), 1), expected_seconds, info=dict(info or {}))

    def run() -> None:
        state = FAILED
        try:
            job.result = work(job)
            state = DONE
        except Cancelled:
            state = CANCELLED
        except BaseException as exc:  # handed to the page, which shows it in one line
            job.error = exc
        finally:
            # the end time first: a page that sees the job finished reads one duration from then on (set after the
            # state, a page could read elapsed() before it and again after, and state two durations of one release)
            job.finished_at = time.monotonic()
            job.state = state

    job._thread = threading.Thread(target=run, name=f"job-{name}", daemon=True)
    job._thread.start()
    return job


def start_sweep(data, domain, run: dict, *, key: str, seconds_per_run: float | None = None) -> Job:
    """A sweep (:func:`dpcore.metrics.sweep`) as a background job: every ``(label, method, options)``
    of ``run["methods"]`` released at every ε of ``run["epsilons"]``, ``run["reps"]`` times, each
    release measured by ``run["measures"]`` (``run["sets"]`` sets, ``run["specks_model"]``).
    Cancelling stops after the release in progress and keeps the results so far. ``key`` names the
    settings (for :func:`collect_sweep`'s cache); ``seconds_per_run`` (from an earlier sweep) gives
    the time-left estimate. The sweep's releases are curator evaluation: discarded, never recorded."""
    from dpcore.metrics import sweep

    n_runs = len(run["methods"]) * len(run["epsilons"]) * int(run["reps"])

    def work(j: Job):
        return sweep(data, methods=[(lab, m, o) for lab, m, o in run["methods"]], epsilons=run["epsilons"],
                     reps=run["reps"], measures=tuple(run["measures"]), domain=domain, sets=run["sets"],
                     specks_model=run["specks_model"], cancel=j.cancel_event,
                     progress=lambda done, total, msg="", *a, **k: j.report(done, total, str(msg)))

    return start("sweep", work, total=max(n_runs, 1),
                 expected_seconds=seconds_per_run * n_runs if seconds_per_run else None, info={"key": key})


def collect_sweep(job: Job, cache: dict) -> tuple[Any, float | None] | None:
    """A finished sweep job's result, once: ``(result, seconds per release)`` (None when it ran none),
    the complete result stored in ``cache`` under the job's key; None if the job is still running,
    failed or was collected before."""
    if not job.finished or job.info.get("collected"):
        return None
    job.info["collected"] = True
    if job.state != DONE or job.result is None:
        return None
    res = job.result
    if not res.attrs.get("cancelled"):
        cache[job.info["key"]] = res
    done = res.attrs.get("done")
    return res, (job.elapsed() / max(done, 1) if done else None)
