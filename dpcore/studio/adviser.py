"""The method adviser: which release method suits a table, and why, in plain words.

Each registered method's error (mean two-way S_pMSE, lower is better; 1 is as good as a resample of
the data) is **predicted** by a small model fitted to the corpus of public tables
(:mod:`dpcore.studio.error_model`, shipped as ``adviser_model.json``; refitted by
``bench/accuracy/fit_adviser.py``) from public facts only: the declared domain's attributes and levels, ε, δ
(pure ε or zCDP), m and a public record count n. So choosing the method by it is not a use of the
data, and a release made with the recommended method has exactly the guarantee its ledger states
(docs/privacy-model.md). The public n is, in this order: the noisy record count of a release of the
table, n under replace-one neighbours, or a figure the curator states; without one the prediction is
averaged over n from 10² to 10⁶, and the advice says which it used.

A method is recommended only if it can run the design: the caller passes ``check(method, options)``,
which runs that method's own preview (:func:`dpcore.preview`, spends nothing) and raises a
:class:`dpcore.errors.DPCoreError` when it cannot; such methods are listed as "cannot run" with the
reason. The expected noise of each method against the typical count
(:func:`dpcore.previews.expected_noise`) is shown beside, from a record count that may be the table's own
(then ``Advice.curator_only``). Docs: docs/methods/adviser.md.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from dpcore.data.domain import Domain
from dpcore.errors import DPCoreError
from dpcore.studio.error_model import N_GRID, ErrorModel, PublicFacts, load_model, public_facts
from dpcore.studio.noise_check import passes, what_passes
from dpcore.synthesizers import REGISTRY

__all__ = ["MethodAdvice", "Advice", "METHODS", "MENU", "NAMES", "NAMES_OFFERED", "WHAT", "recommend", "advise",
           "noise_summary", "predicted_errors", "sweep_disagreements", "CLOSE_WITHIN", "GOOD_WITHIN"]

#: The methods the adviser ranks: every registered one (the registry is the only list of methods).
METHODS = tuple(REGISTRY)
#: The Design page's menu: one entry per method family, in the registry's order (a STEPS variant is
#: chosen by the tree selection control, so only the method whose tree selection is free is listed).
MENU = tuple(name for name, spec in REGISTRY.items() if spec.tree_select is None)

#: Each method's name as the Design page and the adviser show it (the registry's ``display_name``).
NAMES = {name: spec.display_name for name, spec in REGISTRY.items()}
#: The Design page's menu with its names.
NAMES_OFFERED = {name: NAMES[name] for name in MENU}
#: What each method does, in one or two plain sentences (no figures); the registry's ``summary``.
WHAT = {name: spec.summary for name, spec in REGISTRY.items()}

#: Within this factor of the recommended method's predicted error a method is "close" (the validation's 15%).
CLOSE_WITHIN = 1.15
#: Within this factor it is "good"; further away "weak".
GOOD_WITHIN = 2.0

Check = Callable[[str, dict], object]


@dataclass(frozen=True)
class MethodAdvice:
    """What the adviser says of one method: ``verdict`` is recommended, close, good, weak, noise check fails
    (its noise swamps most of the counts it releases at this design: never recommended while another passes),
    cannot run or not modelled; ``predicted`` its predicted mean two-way S_pMSE (None when not modelled); ``why`` plain
    sentences; ``noise`` the expected-noise rows (empty without n)."""

    method: str
    name: str
    verdict: str
    why: tuple
    predicted: float | None = None
    noise: tuple = ()
    reason: str = ""

    @property
    def swamped_counts(self) -> int:
        return sum(r.counts for r in self.noise if r.swamped)

    @property
    def total_counts(self) -> int:
        return sum(r.counts for r in self.noise)

    def to_dict(self) -> dict:
        return {"method": self.method, "name": self.name, "verdict": self.verdict,
                "predicted_spmse": self.predicted, "reason": self.reason or " ".join(self.why[1:2])}


@dataclass(frozen=True)
class Advice:
    """The adviser's answer for one table and design (see :func:`advise`); ``methods`` is the ranking:
    the methods that can run by predicted error, then those that cannot."""

    recommended: str | None
    epsilon: float
    sets: int
    delta: float | None
    methods: tuple
    public_n: float | None = None
    public_n_source: str = ""
    n: float | None = None
    n_source: str = ""
    curator_only: bool = False
    summary: str = ""
    notes: tuple = field(default_factory=tuple)
    validation: dict | None = None
    checked: bool = False

    def for_method(self, method: str) -> MethodAdvice | None:
        return next((a for a in self.methods if a.method == method), None)

    def to_dict(self) -> dict:
        return {"recommended": self.recommended, "ranking": [a.to_dict() for a in self.methods],
                "epsilon": self.epsilon, "delta": self.delta, "sets": self.sets,
                "n": {"value": self.public_n, "source": self.public_n_source},
                "summary": self.summary, "notes": list(self.notes), "validation": self.validation,
                "checked_by_preview": self.checked}


def predicted_errors(domain: Domain, epsilon: float, sets: int, *, delta: float | None = None,
                     public_n: float | None = None, model: ErrorModel | None = None) -> dict[str, float]:
    """Each modelled method's predicted mean two-way S_pMSE, from public facts only (no records: the
    domain's levels, ε, δ, m and a public n; without n, the geometric mean over n in :data:`N_GRID`)."""
    model = model or load_model()
    zcdp = delta is not None
    facts: PublicFacts | None
    grid: Sequence[PublicFacts]
    if public_n is not None:
        facts, grid = public_facts(domain, epsilon, sets, public_n, zcdp=zcdp), ()
    else:
        facts, grid = None, [public_facts(domain, epsilon, sets, n, zcdp=zcdp) for n in N_GRID]
    out = {}
    for name, spec in REGISTRY.items():
        if name in model.methods and (not zcdp or "zcdp" in spec.definitions):
            out[name] = model.predict(name, facts, grid=grid)
    return out


def _cannot_run(method: str, delta: float | None, check: Check | None, options: dict) -> str:
    """Why ``method`` cannot run this design ("" if it can, or if no check was given)."""
    if delta is not None and "zcdp" not in REGISTRY[method].definitions:
        return "it releases under pure ε-DP only"
    if check is None:
        return ""
    try:
        check(method, dict(options.get(method, {})))
    except DPCoreError as exc:
        return str(exc)
    return ""


def recommend(domain: Domain, epsilon: float, sets: int, delta: float | None = None, *,
              public_n: float | None = None, check: Check | None = None, options: dict | None = None,
              model: ErrorModel | None = None) -> str | None:
    """The recommended method: the lowest predicted error among the methods whose preview passes
    (``check``); None when none can run. Public facts only (see the module docstring)."""
    pred = predicted_errors(domain, epsilon, sets, delta=delta, public_n=public_n, model=model)
    for method in sorted(pred, key=pred.__getitem__):
        if not _cannot_run(method, delta, check, options or {}):
            return method
    return None


def _verdict(pred: float | None, best: float | None, reason: str) -> str:
    if reason:
        return "cannot run"
    if pred is None:
        return "not modelled"
    if best is None or pred <= best:
        return "recommended"
    return "close" if pred <= CLOSE_WITHIN * best else "good" if pred <= GOOD_WITHIN * best else "weak"


def _noise(method, domain, epsilon, sets, n, neighbours, delta, options, first) -> tuple[tuple, str]:
    """The method's expected-noise rows and their sentence; a failure here is the noise figures' own
    (the method's preview decides whether it can run). ``first``: what the release spends on its domain before
    its sets (:meth:`dpcore.previews.ReleaseDesign.domain_keywords`), so the rows are the noise check's."""
    from dpcore.previews import expected_noise

    given = {k: v for k, v in options.get(method, {}).items() if k not in ("delta", "neighbours")}
    try:
        rows = tuple(expected_noise(method, domain, epsilon, n=n, sets=sets, neighbours=neighbours, delta=delta,
                                    **given, **first))
    except DPCoreError as exc:
        return (), f"Its noise figures are not available for these options ({exc})."
    return rows, noise_summary(rows)


def advise(domain: Domain, epsilon: float, sets: int, *, delta: float | None = None, public_n: float | None = None,
           public_n_source: str = "", n: float | None = None, n_source: str = "", curator_only: bool = False,
           neighbours: str = "add_remove", options: dict | None = None, check: Check | None = None,
           model: ErrorModel | None = None, domain_first: dict | None = None) -> Advice:
    """Which methods suit this table and why: every registered method's predicted error (public facts
    only: ``domain``'s levels, ε, ``delta``, m and ``public_n``), ranked; the lowest whose ``check``
    passes is recommended, the others that fail it "cannot run" with the reason. ``n`` (possibly the
    table's own count: ``curator_only``) gives each method's expected noise against the typical count.
    ``options``: per method, the design's options (e.g. ``{"steps": {"layers": 3}}``). ``domain_first``: what the
    release spends on its domain before its sets (``bins_share`` or ``domain_share``, ``levels_delta``: as
    :func:`dpcore.previews.expected_noise` takes them), so each method's noise is the one its noise check states."""
    model = model or load_model()
    options, first = dict(options or {}), dict(domain_first or {})
    pred = predicted_errors(domain, epsilon, sets, delta=delta, public_n=public_n, model=model)
    reasons = {m: _cannot_run(m, delta, check, options) for m in METHODS}
    noises = {m: _noise(m, domain, epsilon, sets, n, neighbours, delta, options, first) if n is not None else ((), "")
              for m in METHODS}
    runnable = {m: p for m, p in pred.items() if not reasons[m]}
    # the pick passes its own noise check (the Preview's) at this design's m, ε and δ: a method whose noise
    # swamps most of its released counts is ranked but not recommended, unless every runnable one fails it
    noisy = {m for m in runnable if noises[m][0] and not passes(noises[m][0])}
    eligible = {m: p for m, p in runnable.items() if m not in noisy} or runnable
    best = min(eligible, key=eligible.__getitem__) if eligible else None
    advice = []
    for method in METHODS:
        p = pred.get(method)
        why = [WHAT[method]]
        if reasons[method]:
            why.append(f"It cannot run this design: {reasons[method]}.")
        elif p is None:
            why.append("The adviser's model has no results for it under this definition, so it does not rank it.")
        else:
            why.append(f"Predicted mean two-way S_pMSE {_num(p)} from public facts"
                       + ("" if best is None or method == best else f" ({p / runnable[best]:.2g}× the recommended)")
                       + ".")
        noise, sentence = noises[method]
        why.append(sentence)
        if method in noisy and method != best:
            why.append("Not recommended: its noise check fails at this design (the noise is larger than the "
                       "typical count on most of the counts it releases).")
        verdict = "noise check fails" if method in noisy and method != best and not reasons[method] else \
            _verdict(p, None if best is None else runnable.get(best), reasons[method])
        advice.append(MethodAdvice(method, NAMES[method], verdict, tuple(w for w in why if w), p, noise,
                                   reasons[method]))
    order = {m: i for i, m in enumerate(sorted(METHODS, key=lambda m: (bool(reasons[m]), m not in pred,
                                                                        pred.get(m, math.inf))))}
    advice.sort(key=lambda a: order[a.method])
    notes = _notes(domain, epsilon, sets, delta, public_n, public_n_source, model, check, advice, n)
    if best is not None and best in noisy:
        notes.insert(0, f"Every method that can run this design fails its noise check at ε = {epsilon:g}, m = "
                        f"{sets}; {NAMES[best]} is the least bad by prediction. "
                        + what_passes(best, domain, epsilon, sets, n=float(n or 0), neighbours=neighbours, delta=delta,
                                      **{k: v for k, v in options.get(best, {}).items()
                                         if k not in ("delta", "neighbours")}, **first))
    summary = _summary(best, eligible, delta, gated=bool(noisy) and best not in noisy)
    return Advice(best, float(epsilon), int(sets), delta, tuple(advice), public_n, public_n_source, n, n_source,
                  curator_only, summary, tuple(notes), model.validation, check is not None)


def _summary(best: str | None, runnable: dict, delta: float | None, gated: bool = False) -> str:
    """``runnable``: the methods the pick was made among; ``gated``: some that can run were left out because their
    noise check fails (the sentence says so)."""
    if best is None:
        return ("No method can run this design (see each method's reason): change the options, the domain or "
                "the definition.")
    others = sorted((m for m in runnable if m != best), key=runnable.__getitem__)[:2]
    line = ", ".join(f"{NAMES[m]} {_num(runnable[m])}" for m in [best, *others])
    return (f"For this table the adviser recommends {NAMES[best]}: the lowest predicted error among the methods "
            "that can run this design" + (" and pass their noise check" if gated else "")
            + f" (predicted mean two-way S_pMSE, lower is better: {line}). "
            "These are predictions from public facts (attributes, levels, ε" + (", δ" if delta is not None else "")
            + ", m, n), not measurements on your table; the choice does not change the release's guarantee.")


def _notes(domain, epsilon, sets, delta, public_n, public_n_source, model, check, advice, n) -> list[str]:
    notes = []
    if public_n is not None:
        notes.append(f"Predictions use n = {public_n:,.0f}: {public_n_source or 'a public record count'}.")
    else:
        notes.append(f"No public record count is known, so each prediction is averaged over n from "
                     f"{N_GRID[0]:,.0f} to {N_GRID[-1]:,.0f}; give a public figure for n (or release once: "
                     "its noisy count is public) to sharpen it.")
    v = model.validation or {}
    if v.get("cases"):
        notes.append(f"The model was fitted to {v['tables']} public tables of the corpus; left out table by table, "
                     f"its pick was within 15% of the best method's error on {v['share_within']:.0%} of "
                     f"{v['cases']} cases (bench/RESULTS.md)"
                     + (f"; an oracle that knows each case, picking on half of its seeds, scores "
                        f"{v['seed_ceiling']['share_within']:.0%} on the other half"
                        if (v.get("seed_ceiling") or {}).get("cases") else "")
                     + f". Its predictions are typically off by a factor {10 ** v['log10_rmse']:.2g}.")
    if check is None:
        notes.append("The methods' previews were not run here, so whether each can run this design is not checked.")
    if n is not None and all(a.total_counts and a.swamped_counts > a.total_counts / 2 for a in advice):
        notes.append(f"At ε/m = {epsilon / sets:.3g} per set most released counts are smaller than their noise, "
                     "whatever the method: a larger ε or fewer sets m give each count less noise.")
    return notes


def sweep_winners(results, label_method: dict) -> dict:
    """{ε: (label, method)} of a sweep's tidy results (:func:`dpcore.metrics.sweep`): at each ε, the release
    with the lowest mean S_pMSE over its repetitions (runs that failed are left out)."""
    s = results[results["measure"] == "s_pmse"].dropna(subset=["value"])
    means = s.groupby(["epsilon", "method"])["value"].mean()
    out = {}
    for eps, by_label in means.groupby(level=0):
        label = by_label.droplevel(0).idxmin()
        out[float(eps)] = (label, label_method.get(label))
    return out


def sweep_disagreements(results, label_method: dict, pick_at: Callable[[float], str | None]) -> list[str]:
    """Where a sweep on the curator's own table and the adviser disagree: one sentence per ε of the sweep
    whose winner (:func:`sweep_winners`) is not the method the adviser recommends at that ε (``pick_at``).
    The sweep reads the raw data, so these sentences are curator-only."""
    out = []
    swept = set(label_method.values())
    for eps, (label, method) in sorted(sweep_winners(results, label_method).items()):
        pick = pick_at(eps)
        if pick is None or pick == method:
            continue
        if pick not in swept:
            out.append(f"At ε = {eps:g} the adviser recommends {NAMES[pick]}, which this sweep did not run; of the "
                       f"methods swept, {label} measured the lowest S_pMSE. Add {NAMES[pick]} to compare.")
        else:
            out.append(f"At ε = {eps:g} the sweep's lowest S_pMSE is {label}'s, while the adviser recommends "
                       f"{NAMES[pick]} (predicted from public facts): on your table the measurement says "
                       f"{label}.")
    return out


def noise_summary(rows) -> str:
    """One plain sentence on a method's expected noise rows (:class:`dpcore.synthesizers.empty_share.NoiseRow`)."""
    rows = list(rows)
    if not rows:
        return ""
    total = sum(r.counts for r in rows)
    swamped = sum(r.counts for r in rows if r.swamped)
    worst = max(rows, key=lambda r: r.ratio)
    about = "about " if worst.estimate else ""
    text = (f"noise SD {_num(worst.noise_sd)} records per count on {worst.what}, where a count holds {about}"
            f"{_num(worst.typical_count)} on average")
    if swamped == 0:
        return f"The noise is smaller than the typical count everywhere; the largest: {text}."
    if swamped == total:
        return f"The noise is larger than the typical count on every released count: {text}."
    return (f"The noise is larger than the typical count on {_count(swamped)} of {_count(total)} released counts: "
            f"{text}.")


def _num(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 1:
        return f"{x:.3g}"
    return f"{x:.2g}"


def _count(k: int) -> str:
    return f"{k:,}" if k < 1e12 else f"{k:.2g}"
