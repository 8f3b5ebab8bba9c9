"""bench/ is indexed and its results cite what exists ([typed-contracts] item 6).

* bench/README.md's index names every script of bench/ (one row each, in its kind's folder) and only
  scripts that exist; each row's command runs that script, or says it is imported;
* every ``bench/…`` file path named in bench/, docs/, dpcore/, tests/ and the README exists, except the
  retired ones that bench/RESULTS.md's summary says are retired;
* bench/RESULTS.md opens with a summary ("Where things stand") of at most 80 lines, every row of which
  has a date and names scripts that exist; the dated history follows it;
* relative links in bench/'s Markdown files resolve.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
KINDS = ("speed", "accuracy", "papers", "checks", "tools")
#: one row of the index: | `kind/script.py` | kind | what | command | results |
INDEX_ROW = re.compile(r"^\| `([\w/]+\.py)` \| (\w+) \|(.*)$", re.M)
#: a file under bench/ named in text (globs such as findings-*.csv are left out; bench/out/ is git-ignored)
BENCH_PATH = re.compile(r"(?<![\w/.:-])bench/[\w./-]+\.(?:py|csv|toml|md|txt|png|json)\b")
SUMMARY = "## Where things stand"
HISTORY = "# History, oldest first"
SUMMARY_LINES = 80


def _scripts() -> set[str]:
    """Every script of bench/, as its path under bench/."""
    return {str(p.relative_to(BENCH)) for p in BENCH.rglob("*.py") if "out" not in p.relative_to(BENCH).parts}


def index_problems(readme: str, scripts: set[str]) -> list[str]:
    """What bench/README.md's index gets wrong against ``scripts`` (paths under bench/)."""
    rows = INDEX_ROW.findall(readme)
    named = [r[0] for r in rows]
    problems = [f"indexed twice: {n}" for n in sorted({n for n in named if named.count(n) > 1})]
    problems += [f"indexed but absent: {n}" for n in sorted(set(named) - scripts)]
    problems += [f"not in the index: {s}" for s in sorted(scripts - set(named))]
    for script, kind, rest in rows:
        if script.split("/")[0] != kind or kind not in KINDS:
            problems.append(f"{script}: kind '{kind}' is not its folder (one of {', '.join(KINDS)})")
        if f"bench/{script}" not in rest and "imported" not in rest:
            problems.append(f"{script}: its row's command does not run bench/{script}")
    return problems


def test_the_index_names_every_script_and_only_scripts_that_exist():
    scripts = _scripts()
    assert len(scripts) >= 30
    assert {s.split("/")[0] for s in scripts} == set(KINDS), "a script outside bench/'s kind folders"
    problems = index_problems((BENCH / "README.md").read_text(encoding="utf-8"), scripts)
    assert not problems, problems


def test_the_index_check_can_fail():
    readme = (BENCH / "README.md").read_text(encoding="utf-8")
    scripts = _scripts()
    assert index_problems(readme, scripts | {"speed/new_bench.py"}) == ["not in the index: speed/new_bench.py"]
    assert index_problems(readme, scripts - {"checks/releases_unchanged.py"}) == [
        "indexed but absent: checks/releases_unchanged.py"]
    moved = readme.replace("| `speed/engines.py` | speed |", "| `speed/engines.py` | accuracy |")
    assert index_problems(moved, scripts) == [
        "speed/engines.py: kind 'accuracy' is not its folder (one of speed, accuracy, papers, checks, tools)"]


def _retired(results: str) -> set[str]:
    """The bench/ paths the summary of bench/RESULTS.md names as retired (its "Retired …" paragraph)."""
    summary = results.split(HISTORY, 1)[0]
    para = summary[summary.index("**Retired"):]
    return set(BENCH_PATH.findall(para))


def missing_bench_paths(text: str, allowed: set[str]) -> list[str]:
    """bench/ files named in ``text`` that do not exist (bench/out/ is git-ignored: what a run writes there
    is not in a clone)."""
    return sorted({p for p in BENCH_PATH.findall(text)
                   if not p.startswith("bench/out/") and not (ROOT / p).exists() and p not in allowed})


TEXTS = sorted({*BENCH.rglob("*.py"), *BENCH.rglob("*.md"), *BENCH.glob("*.txt"), *(ROOT / "docs").rglob("*.md"),
                *(ROOT / "dpcore").rglob("*.py"), *(ROOT / "tests").rglob("*.py"), ROOT / "README.md",
                ROOT / "Makefile", ROOT / "pyproject.toml", ROOT / "requirements-dev.txt", ROOT / "app.py"}
               - {Path(__file__).resolve()})  # this file names missing paths on purpose, in its negative controls


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_bench_path_named_exists(path):
    allowed = _retired((BENCH / "RESULTS.md").read_text(encoding="utf-8")) if path.name == "RESULTS.md" else set()
    missing = missing_bench_paths(path.read_text(encoding="utf-8"), allowed)
    assert not missing, f"{path.relative_to(ROOT)} names bench/ files that do not exist: {missing}"


def test_the_bench_path_check_can_fail():
    results = (BENCH / "RESULTS.md").read_text(encoding="utf-8")
    assert "bench/aim_zcdp_diagnosis.py" in _retired(results)
    text = "run `bench/peers.py` (moved), `bench/accuracy/peers.py`, git show REV:bench/corpus_results.csv, " \
           "bench/out/x.json, bench/data/findings-*.csv and bench/aim_zcdp_diagnosis.py"
    assert missing_bench_paths(text, set()) == ["bench/aim_zcdp_diagnosis.py", "bench/peers.py"]
    assert missing_bench_paths(text, _retired(results)) == ["bench/peers.py"]


def summary_problems(results: str, scripts: set[str]) -> list[str]:
    """bench/RESULTS.md must open with the summary, short, each row dated and citing scripts that exist."""
    first = re.search(r"^## .*$", results, re.M)
    if not results.startswith("# ") or not first or first.group(0) != SUMMARY:
        return [f"RESULTS.md does not open with '{SUMMARY}'"]
    if HISTORY not in results:
        return [f"RESULTS.md has no '{HISTORY}' after its summary"]
    summary = results[results.index(SUMMARY):results.index(HISTORY)]
    problems = []
    if len(summary.splitlines()) > SUMMARY_LINES:
        problems.append(f"the summary has {len(summary.splitlines())} lines (at most {SUMMARY_LINES})")
    rows = [r for r in summary.splitlines() if r.startswith("| ") and not r.startswith(("| area", "|---"))]
    if len(rows) < 10:
        problems.append(f"the summary has {len(rows)} rows")
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        area = cells[0]
        if not re.search(r"\b(2026-)?\d\d-\d\d\b", cells[-2]):
            problems.append(f"{area}: no date")
        cited = re.findall(r"`((?:" + "|".join(KINDS) + r")/[\w]+\.py)", cells[-1])
        if not cited:
            problems.append(f"{area}: no script")
        problems += [f"{area}: {c} does not exist" for c in cited if c not in scripts]
    return problems


def test_results_open_with_a_dated_summary_of_existing_scripts():
    problems = summary_problems((BENCH / "RESULTS.md").read_text(encoding="utf-8"), _scripts())
    assert not problems, problems


def test_the_summary_check_can_fail():
    results = (BENCH / "RESULTS.md").read_text(encoding="utf-8")
    scripts = _scripts()
    assert summary_problems(results, scripts - {"speed/engines.py"})[0].endswith("speed/engines.py does not exist")
    # the adviser's row, whatever date it has today, with its date taken away
    undated = re.sub(r"\| [0-9-]{10} \| `accuracy/fit_adviser.py`", "| soon | `accuracy/fit_adviser.py`", results,
                     count=1)
    assert undated != results
    assert summary_problems(undated, scripts) == ["method adviser: no date"]
    assert summary_problems(results.replace(SUMMARY, "## Summary"), scripts)[0].startswith(
        "RESULTS.md does not open with")
    long = results.replace(HISTORY, "\n" * SUMMARY_LINES + HISTORY)
    assert summary_problems(long, scripts)[0].startswith("the summary has")


@pytest.mark.parametrize("doc", sorted(BENCH.rglob("*.md")), ids=lambda p: str(p.relative_to(ROOT)))
def test_bench_markdown_links_resolve(doc):
    for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text(encoding="utf-8")):
        if target.startswith(("http://", "https://", "#")):
            continue
        path = (doc.parent / target.partition("#")[0]).resolve()
        assert path.exists(), f"{doc.relative_to(ROOT)}: broken link {target}"
        assert ROOT in path.parents, f"{doc.relative_to(ROOT)}: link leaves the repository: {target}"
