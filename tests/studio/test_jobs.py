"""Long jobs (dpcore.studio.jobs) and the release's progress callback: progress, the time left,
cancellation, and what a cancelled release leaves in the budget book."""
from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

import dpcore
from dpcore.studio import jobs
from dpcore.studio.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]


def test_a_job_reports_progress_and_its_result():
    gate = threading.Event()

    def work(job):
        for i in range(4):
            job.report(i, 4, f"step {i + 1} of 4")
            if i == 2:
                gate.wait(5)
        job.report(4, 4, "done")
        return 42

    job = jobs.start("demo", work, total=4)
    deadline = time.time() + 5
    while job.done < 2 and time.time() < deadline:
        time.sleep(0.01)
    assert not job.finished and job.done == 2 and job.fraction() == 0.5
    assert job.remaining() is not None and "2/4 — step 3 of 4" in job.status_line()
    gate.set()
    assert job.wait(5) and job.state == jobs.DONE and job.result == 42 and job.fraction() == 1.0


def test_a_job_says_it_has_finished_only_once_its_end_time_is_set(monkeypatch):
    """[studio-truth] The Release page read a job's duration twice once it had finished (the notice and the caption):
    the state was set before the end time, so a read between the two took the clock, and the page said "Released 1
    set(s) in 1.1 s" above "Released in 1.62 s" for one release. The end time is set first."""
    bound = threading.Event()
    finished_when_timed = []
    held = {}

    def monotonic():
        if threading.current_thread().name == "job-timed":  # the job's end time is being taken
            finished_when_timed.append(held["job"].finished)
        return time.monotonic()

    monkeypatch.setattr(jobs, "time", SimpleNamespace(monotonic=monotonic))
    held["job"] = job = jobs.start("timed", lambda j: bound.wait(5) and 1)
    bound.set()
    assert job.wait(5) and job.state == jobs.DONE
    assert finished_when_timed == [False]
    assert job.elapsed() == job.elapsed() == job.finished_at - job.started


def test_the_time_left_before_the_first_step_comes_from_the_prior_estimate():
    gate = threading.Event()
    job = jobs.start("slow", lambda j: gate.wait(5), total=3, expected_seconds=100.0)
    try:
        time.sleep(0.05)
        assert 99.0 < job.remaining() <= 100.0 and 0 < job.fraction() < 0.01
        assert jobs.start("unknown", lambda j: None).remaining() in (None, 0.0)
    finally:
        gate.set()
        job.wait(5)


def test_cancel_stops_at_the_next_checkpoint():
    started, steps = threading.Event(), []

    def work(job):
        for i in range(1000):
            job.checkpoint()
            steps.append(i)
            started.set()
            time.sleep(0.005)
        return "finished"

    job = jobs.start("cancel me", work, total=1000)
    assert started.wait(5)
    job.cancel()
    assert job.wait(5) and job.state == jobs.CANCELLED and job.result is None
    assert 0 < len(steps) < 1000


def test_a_failing_job_keeps_its_error():
    job = jobs.start("bad", lambda j: (_ for _ in ()).throw(dpcore.OptionError("epsilon must be positive")))
    assert job.wait(5) and job.state == jobs.FAILED and "epsilon must be positive" in str(job.error)


def test_synthesize_reports_each_set_and_the_seeded_release_is_unchanged(s7, s7_domain):
    df, dom = s7, s7_domain
    calls = []
    with_cb = dpcore.synthesize(df, method="steps", epsilon=1.0, sets=3, seed=11, domain=dom,
                                progress=lambda d, t: calls.append((d, t)))
    plain = dpcore.synthesize(df, method="steps", epsilon=1.0, sets=3, seed=11, domain=dom)
    assert calls == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert [s.to_csv(index=False) for s in with_cb.sets] == [s.to_csv(index=False) for s in plain.sets]
    assert with_cb.ledger.to_dict() == plain.ledger.to_dict() and with_cb.record_count == plain.record_count


def test_a_release_cancelled_between_sets_returns_nothing_and_spends_nothing(s7, s7_domain, tmp_path):
    """The Release page's Cancel: the progress callback raises before the next set, the budget book
    marks the entry aborted (no output left the process) and the spent ε is unchanged."""
    df, dom = s7, s7_domain
    ws = Workspace(tmp_path / "ws")
    fp = ws.add_table(df, "s7").fingerprint
    ws.release(fp, 0.5, "steps", "add_remove", lambda: dpcore.synthesize(df, epsilon=0.5, sets=1, seed=1, domain=dom))
    assert ws.budget(fp)["spent"] == pytest.approx(0.5)

    def work(job):
        def progress(done, total):
            job.report(done, total)
            if done == 1:
                job.cancel()  # the curator clicks Cancel while set 1 runs
            if done < total:
                job.checkpoint()

        return ws.release(fp, 1.0, "aim", "add_remove",
                          lambda: dpcore.synthesize(df, method="aim", epsilon=1.0, sets=3, seed=2, domain=dom,
                                                    progress=progress))

    job = jobs.start("release", work, total=3)
    assert job.wait(60) and job.state == jobs.CANCELLED and job.done == 1
    entries = ws.releases(fp)
    assert [e["status"] for e in entries] == ["complete", "aborted"]
    assert ws.budget(fp)["spent"] == pytest.approx(0.5)


def test_a_sweep_job_is_collected_once_into_the_cache(s7, s7_domain, monkeypatch):
    """dpcore.studio.jobs.start_sweep / collect_sweep (the Trade-offs page's job runner): the sweep's
    arguments reach dpcore.metrics.sweep, the finished result is cached under the job's key once,
    and a cancelled sweep's partial result is shown but not cached."""
    df, dom = s7, s7_domain
    seen = {}

    def fake_sweep(data, *, methods, epsilons, reps, cancel, progress, **kw):
        seen.update(methods=methods, epsilons=epsilons, reps=reps, **kw)
        progress(1, 2, "half")
        out = pd.DataFrame({"eps": epsilons})
        out.attrs.update(done=2, cancelled=kw["sets"] == 9)
        return out

    import dpcore.metrics

    monkeypatch.setattr(dpcore.metrics, "sweep", fake_sweep)
    run = {"methods": [("STEPS", "steps", {})], "epsilons": [0.5, 1.0], "reps": 1, "measures": ["pmse"],
           "sets": 1, "specks_model": "main"}
    job = jobs.start_sweep(df, dom, run, key="k1", seconds_per_run=2.0)
    assert job.expected_seconds == 4.0  # 2 runs × 2 s
    assert job.wait(5)
    cache = {}
    res, per_run = jobs.collect_sweep(job, cache)
    assert list(res["eps"]) == [0.5, 1.0] and cache == {"k1": res} and per_run >= 0
    assert seen["methods"] == [("STEPS", "steps", {})] and seen["domain"] is dom and seen["measures"] == ("pmse",)
    assert jobs.collect_sweep(job, cache) is None  # once
    cancelled = jobs.start_sweep(df, dom, {**run, "sets": 9}, key="k2")
    assert cancelled.wait(5)
    res2, _ = jobs.collect_sweep(cancelled, cache)
    assert res2.attrs["cancelled"] and "k2" not in cache


def test_the_comparison_choices_of_a_design(s7, s7_domain):
    """dpcore.studio.design.comparison_choices: the design's release first, every other method with its
    comparator options; a STEPS variant with a random tree drops the selection share r."""
    from dpcore.studio import design

    dom = s7_domain
    d = design.new_design()
    method, opts, problems = design.design_call(d, dom, "aim")
    choices = design.comparison_choices(d, method, opts, problems)
    first = next(iter(choices.values()))
    assert first == (method, opts)
    by_method = {m: o for m, o in choices.values()}
    assert set(by_method) >= {"aim", "mst", "ipf", "privbayes", "steps", "flat_laplace", "uh_random"}
    assert by_method["steps"]["select"] == "mosda" and "r" in by_method["steps_lesda"]
    assert "r" not in by_method["uh_random"] and "utility" not in by_method["uh_random"]
    # a design with problems is not offered; its method then appears only as a comparator would (not for AIM)
    assert "aim" not in {m for m, _ in design.comparison_choices(d, method, opts, ["bad"]).values()}
