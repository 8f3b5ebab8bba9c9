"""The Release page's release as a background job (dpcore.studio.jobs): progress with an estimate,
a Cancel button, and a release that finished while the curator was on another page collected
and shown when they come back.

Everything the job needs is read from the session here, in the script thread; the job thread
touches no Streamlit state (it only fills its :class:`dpcore.studio.jobs.Job`).
"""
from __future__ import annotations

import time

import streamlit as st

import dpcore
from dpcore.privacy.neighbours import book_notion
from dpcore.studio import jobs
from pages.components import state, workspace

JOB_KEY = "release_job"
#: Wait this long for a release before showing its progress (most releases finish within it).
INLINE_WAIT_S = 0.8


def running_job() -> jobs.Job | None:
    job = st.session_state.get(JOB_KEY)
    return job if job is not None and not job.finished else None


def start_release(dom: dpcore.Domain, method: str, opts: dict, epsilon: float, sets: int, label: str) -> jobs.Job:
    """Start the release in a background thread, recorded in the budget book; the job."""
    s = st.session_state
    release = state.release_call(dom, method, opts, epsilon, sets)
    # the book keeps the table under the neighbours and the privacy unit: records and units never add up
    notion = book_notion(opts.get("neighbours", "add_remove"), opts.get("privacy_unit"))
    record = workspace.release_recorder(method, epsilon, notion, opts.get("delta"))
    key = state.work_key()
    times = s.setdefault("_release_seconds", {})
    prior = times.get((method, key, sets))

    def work(job: jobs.Job):
        def progress(done: int, total: int) -> None:
            job.report(done, total, f"set {done + 1} of {total}: noise, fit, sampling" if done < total
                       else "storing the sets and the manifest")
            if done < total:
                job.checkpoint()  # a cancel before the next set: nothing is returned, the book aborts the entry

        return record(lambda: release(progress), getattr(release, "delta_approx", 0.0))

    job = jobs.start("release", work, total=sets, expected_seconds=prior,
                     info={"key": key, "label": label, "method": method, "epsilon": epsilon, "sets": sets})
    s[JOB_KEY] = job
    s.pop("_release_notice", None)
    return job


def collect_release() -> str | None:
    """Move a finished release job into the session (shown by the Release page); its state, or None."""
    s = st.session_state
    job = s.get(JOB_KEY)
    if job is None or not job.finished or job.info.get("collected"):
        return None
    job.info["collected"] = True
    info = job.info
    if job.state == jobs.DONE:
        s["release"] = {"main": job.result, "comparators": {}, "errors": {}, "times": {"main": job.elapsed()},
                        "label": info["label"], "key": info["key"]}
        s.setdefault("_release_seconds", {})[(info["method"], info["key"], info["sets"])] = job.elapsed()
        entry = (f" — release {job.result.book_entry} in the budget book."
                 if getattr(job.result, "book_entry", None) else ".")
        s["_release_notice"] = (*_done_notice(job.result, info["sets"], job.elapsed(), entry), info["key"])
    elif job.state == jobs.CANCELLED:
        s["_release_notice"] = ("warning", "Release cancelled before it finished: nothing was released, and the "
                                           "budget book records the entry as aborted (nothing spent).", info["key"])
    else:
        err = job.error
        msg = str(err) if isinstance(err, dpcore.DPCoreError) else (
            f"The release failed ({type(err).__name__}: {err}); nothing was released.")
        s["_release_notice"] = ("error", msg, info["key"])
    return job.state


def _done_notice(release, sets: int, seconds: float, entry: str) -> tuple[str, str]:
    """What a finished release says; an empty one (a noisy record count of 0) says what that means."""
    count = (getattr(release, "record_count", None) or {}).get("value")
    if count == 0:
        return ("warning", f"Released {sets} set(s) in {seconds:.1f} s, all of them empty: the release's noisy "
                           "record count came out 0. That is the guarantee at work, not a fault: at this ε the noise "
                           "on a count is as large as this table, so the release can say nothing about it. The "
                           f"budget is spent all the same{entry} A larger ε or a larger table gives non-empty sets.")
    return "success", f"Released {sets} set(s) in {seconds:.1f} s{entry}"


def notice_for(key: str | None) -> tuple[str, str] | None:
    """The last release's notice when it belongs to the table in use (``key``), else None: a notice never
    outlives its table."""
    notice = st.session_state.get("_release_notice")
    if not notice or (len(notice) > 2 and notice[2] != key):
        return None
    return notice[0], notice[1]


def job_panel(job_key: str, title: str, cancel_label: str, cancel_help: str, running_note: str,
              cancelling_note: str) -> None:
    """Progress bar with the time left and a Cancel button for the job in ``st.session_state[job_key]``,
    refreshed every half second while it runs; the page reruns when the job has finished."""

    @st.fragment(run_every=0.5)
    def _panel():
        job = st.session_state.get(job_key)
        if job is None:
            return
        if job.finished:
            st.rerun()
        st.progress(job.fraction(), text=f"{title}: {job.status_line()}")
        c1, c2 = st.columns([1, 4])
        if c1.button(cancel_label, key=f"cancel_{job_key}", disabled=job.cancelling, help=cancel_help):
            job.cancel()
        c2.caption(cancelling_note if job.cancelling else running_note)

    _panel()


def progress_panel() -> None:
    """The release's progress and its Cancel button."""
    job = st.session_state.get(JOB_KEY)
    job_panel(JOB_KEY, f"Releasing with {job.info['label']}" if job else "Releasing", "Cancel the release",
              "Stops before the next synthetic set: nothing is released and nothing is spent. A set in progress "
              "finishes first.",
              "You can open other pages meanwhile: the release goes on and is shown here when it is done.",
              "Cancelling: the release stops before its next set …")


def wait_briefly(job: jobs.Job) -> None:
    """Give a short release the time to finish before the page shows a progress bar."""
    t0 = time.monotonic()
    while not job.finished and time.monotonic() - t0 < INLINE_WAIT_S:
        job.wait(0.05)


def sidebar_notice() -> None:
    """On every page while a release runs: say so, with the way back to it. The count of sets done is
    redrawn every second (a fragment), so it moves while the curator stays on another page."""
    if running_job() is None:
        return
    _sidebar_progress()


@st.fragment(run_every=1.0)
def _sidebar_progress() -> None:
    job = st.session_state.get(JOB_KEY)
    if job is None:
        return
    if job.finished:
        st.caption(":green[**The release has finished**: it is shown on the Release page.]")
        return
    st.caption(f":orange[**A release is running** ({job.status_line()}). It goes on "
               "while you are here and is shown on the Release page when it is done.]")
