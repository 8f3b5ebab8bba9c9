"""Module boundaries ([docs-architecture]), read from the source with ``ast``:

* no import cycles inside ``dpcore/``;
* no Streamlit anywhere in ``dpcore/`` (the library stands alone);
* the app and its pages import only public names and public modules of ``dpcore``
  (no ``_name``, no ``dpcore.x._private`` module, no CLI module);
* no module of ``dpcore/`` or ``pages/`` (its components included) takes a private (``_name``) name
  from another module, by import or as ``module._name``, and none imports ``*`` (each name from the
  module that defines it);
* only the privacy layer writes ledger charges; synthesizers never import each other;
* estimators (``dpcore/estimate``) import no privacy layer, counting or data reader;
* every module imports only its own layer or lower ones (no known crossings left);
* the app's own modules (app.py, pages/) import each other in no circle;
* ``pages/*.py`` holds only the pages app.py registers with ``st.navigation``; what they share lives in
  ``pages/components/`` (a subfolder, which Streamlit never lists as pages);
* no module outside a method's own names the method (per-method facts are registry fields);
* domain inference's refusals are written once, in ``dpcore/data/inference.py`` (the engines gather facts);
* docs/architecture.md is true to the code: its module map names every module of ``dpcore/`` and only
  modules that exist, and its Size section lists exactly the modules and functions over its limits.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "dpcore"


def _app_files() -> list[Path]:
    """The app's own modules: app.py, the pages and their components."""
    return [ROOT / "app.py", *sorted((ROOT / "pages").rglob("*.py"))]


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module imported, names imported from it) for every import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = _module_name(path) if ROOT in path.parents else path.stem
    pkg = here if path.name == "__init__.py" else here.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((mod, [a.name for a in node.names]))
    return out


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PKG.rglob("*.py")}
    graph = {m: set() for m in modules}
    for m, path in modules.items():
        for mod, names in _imports(path):
            targets = {mod} | {f"{mod}.{n}" for n in names}
            for t in targets:
                # the closest dpcore module the import names (a submodule, or the package itself)
                while t and t not in modules:
                    t = t.rpartition(".")[0]
                if t and t != m and t.startswith("dpcore"):
                    graph[m].add(t)
    return graph


def _cycle(graph):
    colour, stack = {}, []

    def visit(u):
        colour[u] = 1
        stack.append(u)
        for v in sorted(graph[u]):
            if colour.get(v) == 1:
                return stack[stack.index(v):] + [v]
            if colour.get(v) is None:
                found = visit(v)
                if found:
                    return found
        stack.pop()
        colour[u] = 2
        return None

    for u in sorted(graph):
        if colour.get(u) is None:
            found = visit(u)
            if found:
                return found
    return None


def test_no_import_cycles_in_dpcore():
    graph = _graph()
    # packages import their submodules by design; a cycle through an __init__ re-export is
    # still a cycle between the submodules, so only package → own submodule edges are dropped
    for m in graph:
        graph[m] = {t for t in graph[m] if not t.startswith(m + ".")}
    cycle = _cycle(graph)
    assert cycle is None, " → ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_streamlit_in_dpcore():
    for path in PKG.rglob("*.py"):
        for mod, _ in _imports(path):
            assert not mod.startswith("streamlit"), f"{path.relative_to(ROOT)} imports {mod}"


def test_pages_import_only_public_dpcore_names():
    bad = []
    for path in _app_files():
        for mod, names in _imports(path):
            if not mod.startswith("dpcore"):
                continue
            parts = mod.split(".")
            if any(p.startswith("_") for p in parts) or parts[-1] == "cli":
                bad.append(f"{path.name}: module {mod}")
            bad += [f"{path.name}: {mod}.{n}" for n in names if n.startswith("_") or n == "cli"]
        bad += [f"{path.name}: {ref}" for ref in _private_attributes(path)]
    assert not bad, bad


def _private_attributes(path: Path) -> list[str]:
    """``alias._name`` where alias is bound to a dpcore module or name by an import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name.startswith("dpcore")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dpcore") and not node.level:
            aliases |= {a.asname or a.name for a in node.names}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in aliases:
                out.append(f"{ast.unparse(node)} (line {node.lineno})")
    return out


def test_the_public_name_check_can_fail(tmp_path):
    page = tmp_path / "page.py"
    page.write_text("import dpcore\nfrom dpcore.survey import imputation as I\nfrom dpcore.survey import cli\n"
                    "x = I._grid(1)\ny = dpcore.survey._privacy.label\nz = dpcore.synthesize\n", encoding="utf-8")
    assert _private_attributes(page) == ["I._grid (line 4)", "dpcore.survey._privacy (line 5)"]


def test_synthesizers_depend_on_the_shared_module_never_on_each_other():
    """Cell sampling and size limits live in dpcore.synthesizers.cells; no method imports another.
    The methods are the modules whose ``run_set`` the registry holds (not the shared modules
    beside them: options, cells, hierarchy, empty_share)."""
    from dpcore.synthesizers import REGISTRY

    methods = {m.run_set.__module__.rpartition(".")[2] for m in REGISTRY.values()}
    assert {"steps", "flat_laplace", "ipf", "privbayes", "aim", "mst"} <= methods
    bad = []
    for name in sorted(methods):
        for mod, names in _imports(PKG / "synthesizers" / f"{name}.py"):
            targets = {mod.rpartition(".")[2]} | set(names) if mod.startswith("dpcore.synthesizers") else set()
            bad += [f"{name} imports {t}" for t in targets & (methods - {name})]
    assert not bad, bad


def test_comparators_do_not_import_the_steps_hierarchy():
    """[docs-architecture]: ipf, flat Laplace and PrivBayes once took draw_cells from steps.py and
    DEFAULT_MAX_CELLS from hierarchy.py; what they share now lives in dpcore.synthesizers.cells."""
    bad = []
    for name in ("flat_laplace", "ipf", "privbayes"):
        for mod, names in _imports(PKG / "synthesizers" / f"{name}.py"):
            if mod in ("dpcore.synthesizers.hierarchy", "dpcore.synthesizers.steps") or (
                    mod in ("dpcore", "dpcore.synthesizers") and {"hierarchy", "steps"} & set(names)):
                bad.append(f"{name} imports {mod} {names}")
    assert not bad, bad


def _calls(path: Path, attrs: set[str]) -> list[str]:
    """``x.attr(...)`` calls in a file for attr in ``attrs``, and constructions ``Charge(...)``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in attrs:
                out.append(f"{path.relative_to(ROOT)}:{node.lineno} .{f.attr}(")
            elif isinstance(f, ast.Name) and f.id == "Charge":
                out.append(f"{path.relative_to(ROOT)}:{node.lineno} Charge(")
    return out


def test_only_the_privacy_layer_writes_ledger_charges():
    """[architecture]: drawing noise and paying for it are one call of dpcore.privacy.measurement;
    nothing else records a charge (groups, which spend nothing, may be made anywhere)."""
    files = [p for p in PKG.rglob("*.py") if "privacy" not in p.relative_to(PKG).parts]
    files += _app_files()
    bad = [c for p in files for c in _calls(p, {"_record", "spend", "charge"})]
    assert not bad, bad


#: modules outside the privacy layer allowed to build a StatedMechanism: each proves its map in its docstring
#: and in docs/survey-privacy.md (smooth sensitivity; amplification by subsampling a partition)
STATED_MAPS = {"dpcore/survey/_smooth.py", "dpcore/survey/partition.py"}


def _hand_costs(path: Path, where: str) -> list[str]:
    """What would set a charge's cost by hand in ``path``: a Charge built outside privacy/measurement.py, a
    StatedMechanism outside the modules that prove its map, or a cost passed to a Measurement as a number
    (``epsilon=`` / ``rho=`` keywords, or a bare number where its Sensitivity goes)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if name == "Charge" and where != "dpcore/privacy/measurement.py":
            out.append(f"{where}:{node.lineno} Charge(")
        if name == "StatedMechanism" and where not in STATED_MAPS and not where.startswith("dpcore/privacy/"):
            out.append(f"{where}:{node.lineno} StatedMechanism(")
        if name == "Measurement":
            if any(k.arg in ("epsilon", "rho") for k in node.keywords):
                out.append(f"{where}:{node.lineno} Measurement(epsilon=/rho=)")
            if len(node.args) >= 3 and isinstance(node.args[2], ast.Constant):
                out.append(f"{where}:{node.lineno} Measurement(…, a number as the sensitivity)")
    return out


def test_no_call_site_computes_a_measurements_cost_by_hand():
    """[typed-contracts] item 2: a charge's cost is the mechanism's privacy map at the sensitivity the
    stability of the transformations gives (Measurement.cost = map ∘ stability), never a number written at a
    call site."""
    files = [*PKG.rglob("*.py"), *_app_files()]
    bad = [b for p in files for b in _hand_costs(p, str(p.relative_to(ROOT)))]
    assert not bad, bad


def test_the_hand_cost_check_can_fail(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def g(mech, led):\n    Measurement('q', mech, 1.0, 's', 'n')\n"
                 "    Measurement('q', mech, s, 's', 'n', epsilon=0.5)\n"
                 "    StatedMechanism('x', 0.5, 'no proof')\n    Charge(label='x')\n", encoding="utf-8")
    found = _hand_costs(f, "dpcore/synthesizers/m.py")
    assert [b.split(" ", 1)[1] for b in found] == [
        "Measurement(…, a number as the sensitivity)", "Measurement(epsilon=/rho=)", "StatedMechanism(", "Charge("]
    assert _hand_costs(f, "dpcore/survey/_smooth.py")[2:] == ["dpcore/survey/_smooth.py:5 Charge("]


def test_the_ledger_writer_check_can_fail(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def g(ledger, c):\n    ledger._record(c)\n    ledger.spend(1)\n    Charge(label='x')\n",
                 encoding="utf-8")
    ROOT_ = ROOT
    try:
        globals()["ROOT"] = tmp_path
        assert len(_calls(f, {"_record", "spend", "charge"})) == 3
    finally:
        globals()["ROOT"] = ROOT_



def _forbidden_imports(paths, forbidden: tuple[str, ...]) -> list[str]:
    """``file: module`` for every import in ``paths`` of a module in ``forbidden`` (or below
    one), ``from dpcore import counting`` included."""
    bad = []
    for path in paths:
        for mod, names in _imports(path):
            targets = [mod] + [f"{mod}.{n}" for n in names]
            hit = sorted({f for t in targets for f in forbidden if t == f or t.startswith(f + ".")})
            bad += [f"{_shown(path)}: {f}" for f in hit]
    return bad


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if ROOT in path.parents else path.name


#: what an estimator must not see: the privacy layer (samplers, ledger), the counts, the data
ESTIMATION_MUST_NOT_IMPORT = ("dpcore.privacy", "dpcore.counting", "dpcore.data.io")


def test_estimators_see_only_released_measurements():
    """[architecture]: dpcore/estimate fits models to released measurements (NoisyMargins, noisy
    trees) and public facts; it draws no privacy noise, charges nothing, and reads no counts
    or files. (Measurement hands it NoisyMargins and does not import it: the layer order below,
    with no known crossing.)"""
    estimate = sorted((PKG / "estimate").rglob("*.py"))
    assert len(estimate) >= 8
    assert not _forbidden_imports(estimate, ESTIMATION_MUST_NOT_IMPORT)


def test_the_estimation_import_rule_can_fail(tmp_path):
    f = tmp_path / "probe.py"
    f.write_text("from dpcore import counting\nfrom dpcore.privacy.mechanisms import DiscreteLaplace, noise_for\n"
                 "import dpcore.data.io\nfrom dpcore.data.domain import Domain\nimport dpcore.privacy_notes\n",
                 encoding="utf-8")
    assert _forbidden_imports([f], ESTIMATION_MUST_NOT_IMPORT) == [
        "probe.py: dpcore.counting", "probe.py: dpcore.privacy", "probe.py: dpcore.data.io"]


#: The layers of dpcore, lowest first ([architecture]); a module imports only from its own
#: layer or lower ones. data → counting → privacy → measure → estimate → synthesis → release
#: → evaluation and survey tools → the curator's studio → the command line.
LAYERS = [
    {"errors"},
    {"data"},
    {"counting"},
    {"privacy"},
    {"measure"},
    {"estimate"},
    {"synthesizers"},
    {"manifest_summary", "release"},
    {"api", "previews", ""},  # "": the package itself (dpcore/__init__.py re-exports the API)
    {"output"},
    {"metrics", "survey"},
    {"studio"},
    {"cli", "__main__"},
]
#: Known crossings, each with the reason it is allowed; the list may only shrink. It is empty:
#: the sparse leaf layer's record drawing moved to synthesizers/ (its noise to measure/leaf_noise.py),
#: the survey context's synthetic-set release to studio/survey.py.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}


def _layer_of(module: str) -> int:
    part = module.split(".")[1] if "." in module else ""
    for i, names in enumerate(LAYERS):
        if part in names:
            return i
    raise AssertionError(f"{module} is in no layer of LAYERS: add its package")


def test_every_module_imports_only_its_own_layer_or_lower():
    graph = _graph()
    bad = []
    for m, targets in graph.items():
        for t in targets:
            lm, lt = _layer_of(m), _layer_of(t)
            pair = (m.split(".")[1] if "." in m else "", t.split(".")[1] if "." in t else "")
            if lt > lm and pair not in ALLOWED_UPWARD:
                bad.append(f"{m} → {t}")
    assert not bad, bad


def _page_graph(files: list[Path]) -> dict[str, set[str]]:
    """Imports among the app's own modules (app.py and the modules under pages/; lazy imports inside
    functions included): module → the app modules it imports."""
    def name(path: Path) -> str:
        if path.parent == ROOT and path.stem == "app":
            return "app"
        parts = path.with_suffix("").parts
        parts = parts[len(parts) - 1 - parts[::-1].index("pages"):]  # from the (last) pages folder down
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    modules = {name(p) for p in files}
    graph: dict[str, set[str]] = {}
    for path in files:
        targets = set()
        for mod, names in _imports(path):
            targets |= ({mod} | {f"{mod}.{n}" for n in names}) & modules
        graph[name(path)] = targets - {name(path)}
    return graph


def test_no_import_cycles_among_the_pages():
    """[architecture]: pages/_state.py and pages/_workspace.py (now pages/components/state.py and
    workspace.py) once imported each other; the app's own modules form no circle (the session's first
    run and table changes, which touch both, are pages/components/session.py, above them)."""
    graph = _page_graph(_app_files())
    assert "pages.components.state" in graph and "pages.components.workspace" in graph["pages.components.session"]
    cycle = _cycle(graph)
    assert cycle is None, " → ".join(cycle)


def test_the_page_cycle_check_can_fail(tmp_path):
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "_a.py").write_text("def f():\n    from pages import _b\n", encoding="utf-8")
    (pages / "_b.py").write_text("from pages._a import f\n", encoding="utf-8")
    (pages / "_c.py").write_text("import pages._a\n", encoding="utf-8")
    graph = _page_graph(sorted(pages.glob("*.py")))
    assert graph == {"pages._a": {"pages._b"}, "pages._b": {"pages._a"}, "pages._c": {"pages._a"}}
    assert _cycle(graph) == ["pages._a", "pages._b", "pages._a"]


def _registered_pages(app: Path) -> list[str]:
    """The page files app.py registers: the first argument of every ``st.Page("pages/….py", …)``."""
    out = []
    for node in ast.walk(ast.parse(app.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "Page"
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            out.append(node.args[0].value)
    return out


def _page_folder_problems(root: Path) -> list[str]:
    """What breaks "pages/ holds the pages, pages/components/ what they share": a ``pages/*.py`` file that
    app.py does not register (a helper beside the pages), a registered page that is missing, a page that
    another module imports (importing a page runs it), and a component that is not in pages/components/."""
    registered = set(_registered_pages(root / "app.py"))
    files = {str(p.relative_to(root)) for p in (root / "pages").glob("*.py")}
    out = [f"{f}: not a page registered in app.py (helpers go in pages/components/)"
           for f in sorted(files - registered)]
    out += [f"{f}: registered in app.py but missing" for f in sorted(registered - files)]
    pages = {f"pages.{Path(f).stem}" for f in files}
    for path in [root / "app.py", *sorted((root / "pages").rglob("*.py"))]:
        for mod, names in _imports(path):
            hit = ({mod} | {f"{mod}.{n}" for n in names}) & pages
            out += [f"{path.relative_to(root)} imports the page {h}" for h in sorted(hit)]
    for sub in sorted(p for p in (root / "pages").iterdir() if p.is_dir() and p.name != "__pycache__"):
        if sub.name != "components":
            out.append(f"pages/{sub.name}/: components live in pages/components/")
    return out


def test_pages_hold_only_registered_pages_and_their_components_live_in_the_subpackage():
    """[typed-contracts] item 5: pages/ once mixed 8 pages and 23 helpers. Now every ``pages/*.py`` is a
    page of app.py's ``st.navigation`` and no module imports a page; the helpers are modules of
    ``pages/components/`` (a subfolder Streamlit's page list never reads)."""
    assert len(_registered_pages(ROOT / "app.py")) == 8
    assert (ROOT / "pages" / "components" / "__init__.py").is_file()
    assert len(list((ROOT / "pages" / "components").glob("*.py"))) > 20
    assert not _page_folder_problems(ROOT), _page_folder_problems(ROOT)


def test_the_page_folder_check_can_fail(tmp_path):
    (tmp_path / "pages" / "components").mkdir(parents=True)
    (tmp_path / "pages" / "widgets").mkdir()
    (tmp_path / "app.py").write_text('import streamlit as st\npages = [st.Page("pages/data.py", title="Data"), '
                                     'st.Page("pages/gone.py")]\n', encoding="utf-8")
    (tmp_path / "pages" / "data.py").write_text("from pages.components import state\n", encoding="utf-8")
    (tmp_path / "pages" / "_helper.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "pages" / "components" / "state.py").write_text("from pages import data\n", encoding="utf-8")
    assert _registered_pages(tmp_path / "app.py") == ["pages/data.py", "pages/gone.py"]
    assert _page_folder_problems(tmp_path) == [
        "pages/_helper.py: not a page registered in app.py (helpers go in pages/components/)",
        "pages/gone.py: registered in app.py but missing",
        "pages/components/state.py imports the page pages.data",
        "pages/widgets/: components live in pages/components/"]


def _method_name_uses(path: Path, names: set[str]) -> list[str]:
    """Where a file compares a value with a method's name (``method == "aim"``, ``m in ("steps",
    "uh_random")``), writes a dict keyed by two or more method names (a per-method table), or lists
    two or more method names in a tuple, list or set (a list of methods beside the registry's)."""
    def strings(node) -> set[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value}
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        return set()

    out = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # a tuple compared with (``m in ("steps", "uh_random")``) is reported once, as the comparison
    compared = {id(x) for node in ast.walk(tree) if isinstance(node, ast.Compare)
                for x in (node.left, *node.comparators)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            hit = set().union(*(strings(x) for x in (node.left, *node.comparators))) & names
            if hit:
                out.append((node.lineno, f"{_shown(path)}:{node.lineno} compares with {sorted(hit)}"))
        elif isinstance(node, ast.Dict):
            hit = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)} & names
            if len(hit) >= 2:
                out.append((node.lineno, f"{_shown(path)}:{node.lineno} dict keyed by {sorted(hit)}"))
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and id(node) not in compared:
            hit = strings(node) & names
            if len(hit) >= 2:
                out.append((node.lineno, f"{_shown(path)}:{node.lineno} lists {sorted(hit)}"))
    return [text for _, text in sorted(out)]


def test_no_module_outside_a_method_compares_method_names():
    """[architecture] step 3: what is particular to a method (its options, preview and noise rows,
    display name, summary, glossary entry, a STEPS variant's tree selection) is a field of its
    registry entry (dpcore.synthesizers.Method), read from there; only the method's own module
    and the registry itself name methods. The registry's package holds the STEPS variants'
    shared options (synthesizers/options.py: ``STEPS_METHODS``), which counts as STEPS's own."""
    from dpcore.synthesizers import REGISTRY

    names = set(REGISTRY)
    own = {Path(__import__(m.run_set.__module__, fromlist=["_"]).__file__).resolve() for m in REGISTRY.values()}
    own |= {(PKG / "synthesizers" / "__init__.py").resolve(), (PKG / "synthesizers" / "options.py").resolve()}
    files = [*PKG.rglob("*.py"), *_app_files()]
    bad = [u for p in files if p.resolve() not in own for u in _method_name_uses(p, names)]
    assert not bad, bad


def test_the_method_name_check_can_fail(tmp_path):
    f = tmp_path / "page.py"
    f.write_text('family = "steps" if method in ("steps_lesda", "uh_random") else method\n'
                 'ok = method == "aim"\nterm = {"ipf": "dp-ipf", "flat_laplace": "flat-laplace"}\n'
                 'diag = {"ipf": 1, "rows": 2}\nquery = q == "count"\n'
                 'METHODS = ("aim", "mst", "steps")\nmenu = ["ipf", "rows"]\n', encoding="utf-8")
    assert _method_name_uses(f, {"steps", "steps_lesda", "uh_random", "aim", "ipf", "flat_laplace", "mst"}) == [
        "page.py:1 compares with ['steps_lesda', 'uh_random']", "page.py:2 compares with ['aim']",
        "page.py:3 dict keyed by ['flat_laplace', 'ipf']", "page.py:6 lists ['aim', 'mst', 'steps']"]


def _is_project_module(dotted: str) -> bool:
    """Whether ``dotted`` names a module or package of this repository (``pages`` is a namespace
    package: a folder without ``__init__.py``)."""
    path = ROOT.joinpath(*dotted.split("."))
    return path.is_dir() or path.with_suffix(".py").is_file()


def _private_borrowing(source: str, where: str, is_module=_is_project_module) -> list[str]:
    """What a module's source takes from another module that is private there: an imported
    ``_name`` (``from pages import _charts`` imports a module, which is fine), ``alias._name``
    on an imported project module, and every ``import *``. ``__future__`` and dunder names are fine."""
    tree = ast.parse(source)
    out, modules = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname for a in node.names if a.asname and is_module(a.name)}
            modules |= {a.name.split(".")[0] for a in node.names if not a.asname and is_module(a.name)}
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if a.name == "*":
                    out.append(f"{where}:{node.lineno} from {node.module} import *")
                elif is_module(full):
                    modules.add(a.asname or a.name)
                elif a.name.startswith("_") and not a.name.startswith("__"):
                    out.append(f"{where}:{node.lineno} from {node.module} import {a.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            base = node.value
            while isinstance(base, ast.Attribute) and is_module(ast.unparse(base)):
                base = base.value
            if isinstance(base, ast.Name) and base.id in modules:
                out.append(f"{where}:{node.lineno} {ast.unparse(node)}")
    return out


def test_no_module_borrows_another_modules_private_names_or_imports_star():
    """[studio-polish] item 9: a helper used by another module is public, with a name saying what
    it is; a page imports the modules it uses (no star facade), so a name is looked up (and
    patched) where it is defined."""
    files = [*sorted(PKG.rglob("*.py")), *sorted((ROOT / "pages").rglob("*.py"))]
    assert len(files) > 100
    bad = [b for p in files for b in _private_borrowing(p.read_text(encoding="utf-8"), _shown(p))]
    assert not bad, bad


def test_the_private_borrowing_check_can_fail():
    modules = {"dpcore", "dpcore.metrics", "dpcore.metrics.tables", "pages", "pages.components",
               "pages.components.charts", "pages.components.state"}
    source = ("from __future__ import annotations\n"
              "from dpcore.metrics.tables import _cell_ids, utility_tables\n"
              "from pages.components import charts\n"
              "from pages.components.state import *\n"
              "import dpcore.metrics.tables as T\n"
              "x = charts._palette + T._DENSE_LIMIT + charts.OKABE_ITO + T.__name__\n"
              "y = dpcore.metrics.tables._prepare\n"
              "z = self._cache\n")
    assert _private_borrowing(source, "m.py", modules.__contains__) == [
        "m.py:2 from dpcore.metrics.tables import _cell_ids", "m.py:4 from pages.components.state import *",
        "m.py:6 charts._palette", "m.py:6 T._DENSE_LIMIT"]
    assert _private_borrowing("import dpcore\ny = dpcore.metrics.tables._prepare\n", "m.py",
                              modules.__contains__) == ["m.py:2 dpcore.metrics.tables._prepare"]


# ---------------------------------------------------------------- one domain inference, one set of refusals

INFERENCE = PKG / "data" / "inference.py"
#: a literal piece of a refusal this long names it (shorter ones, "' that the data does not have", are shared idiom)
_REFUSAL_PIECE = 30


def _literal_pieces(node) -> list[str]:
    """The literal text of a message expression: a string, an f-string's constant parts, a sum of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _literal_pieces(node.left) + _literal_pieces(node.right)
    return []


def _refusals(source: str, error: str = "DomainError") -> set[str]:
    """The literal pieces (at least _REFUSAL_PIECE characters) of every message the source raises as ``error``."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        call = node.exc if isinstance(node, ast.Raise) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == error and call.args:
            out |= {p.strip() for p in _literal_pieces(call.args[0]) if len(p.strip()) >= _REFUSAL_PIECE}
    return out


def _repeated_refusals(refusals: set[str], sources: dict[str, str]) -> list[str]:
    """``where: piece`` for every refusal piece that a string literal of another module holds."""
    out = []
    for where, source in sources.items():
        texts = [p for node in ast.walk(ast.parse(source))
                 if isinstance(node, ast.Constant | ast.JoinedStr) for p in _literal_pieces(node)]
        out += [f"{where}: {r!r}" for r in sorted(refusals) if any(r in t for t in texts)]
    return out


def test_domain_inference_refuses_in_one_module():
    """[typed-contracts] item 4: the in-memory and the engine paths infer a domain by one rule
    (dpcore/data/inference.py) from facts each engine gathers; its refusals (an empty column, infinite
    values, an identifier, a single level, binning for a column the data lacks) are written there
    only, so the two paths cannot drift apart word by word."""
    refusals = _refusals(INFERENCE.read_text(encoding="utf-8"))
    assert len(refusals) >= 5, refusals
    others = {_shown(p): p.read_text(encoding="utf-8")
              for p in [*sorted(PKG.rglob("*.py")), *sorted((ROOT / "pages").rglob("*.py"))] if p != INFERENCE}
    assert len(others) > 100
    assert not _repeated_refusals(refusals, others)


def test_the_repeated_refusal_check_can_fail():
    refusals = _refusals(INFERENCE.read_text(encoding="utf-8"))
    copy = ("def infer(name, n, cap):\n"
            "    if not n:\n"
            "        raise DomainError(f\"column '{name}' is empty (all values missing); drop it before \"\n"
            "                          \"synthesising\")\n"
            "    raise DomainError(f\"column '{name}' has more than {cap} distinct values; it looks like an \"\n"
            "                      \"identifier or free text. Drop it, or declare it numeric with public \"\n"
            "                      \"bin edges\")\n")
    assert _repeated_refusals(refusals, {"engine.py": copy}) == [
        "engine.py: \"' is empty (all values missing); drop it before synthesising\"",
        "engine.py: '; it looks like an identifier or free text. Drop it, or declare it numeric with public bin edges'"]
    # the same idea in other words, and a shared short idiom, are not a copy
    assert _repeated_refusals(refusals, {"other.py": "m = f\"column '{c}' has no values at all; drop it\"\n"
                                                     "n = f\"{c!r} that the data does not have\"\n"}) == []
    assert _refusals("raise DomainError(f'column {x} is empty (all values missing); drop it before it')\n"
                     "raise OptionError('a message that names an option and is long enough')\n") == {
        "is empty (all values missing); drop it before it"}


# ---------------------------------------------------------------- docs/architecture.md true to the code

ARCH_DOC = ROOT / "docs" / "architecture.md"
#: a module path named in the doc (backticked), and the Size section's rule and lists
_DOC_MODULE = re.compile(r"`(dpcore/[\w/]+\.py)`")
_SIZE_RULE = re.compile(r"A module over (\d+) lines or a function over (\d+) lines")
_STILL_OVER = re.compile(r"^- still over (\d+) lines:(.*?)(?=^- |^\S|\Z)", re.M | re.S)


def _section(text: str, heading: str) -> str:
    """The body of ``## heading`` (to the next ``## `` heading)."""
    _, found, rest = text.partition(f"\n## {heading}\n")
    assert found, f"docs/architecture.md has no section '## {heading}'"
    return rest.split("\n## ", 1)[0]


def _module_map_problems(text: str, modules: set[str]) -> list[str]:
    """What the module map gets wrong against ``modules`` (every dpcore/…py path of the code): paths it
    names that do not exist, and modules (other than ``__init__`` and ``__main__``) it does not name."""
    named = set(_DOC_MODULE.findall(_section(text, "Module map")))
    stale = [f"named but absent: {m}" for m in sorted(named - modules)]
    unnamed = [f"not in the module map: {m}" for m in sorted(modules - named)
               if not m.endswith(("/__init__.py", "/__main__.py"))]
    return stale + unnamed


def _code_modules() -> set[str]:
    return {str(p.relative_to(ROOT)) for p in PKG.rglob("*.py")}


def _long_functions(limit: int) -> set[str]:
    """``module.qualname`` of every function (methods and nested functions too) longer than ``limit`` lines,
    from its ``def`` line to its last line."""
    out = set()

    def walk(node, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                if child.end_lineno - child.lineno + 1 > limit:
                    out.add(f"{prefix}.{child.name}")
                walk(child, f"{prefix}.{child.name}")
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}.{child.name}")

    for path in PKG.rglob("*.py"):
        walk(ast.parse(path.read_text(encoding="utf-8")), _module_name(path))
    return out


def _long_modules(limit: int) -> set[str]:
    return {str(p.relative_to(ROOT)) for p in PKG.rglob("*.py")
            if len(p.read_text(encoding="utf-8").splitlines()) > limit}


def _size_problems(text: str, long_modules, long_functions) -> list[str]:
    """The Size section's lists against the code: ``long_modules(limit)`` and ``long_functions(limit)`` give
    what is over the section's own limits; every name over and not listed, or listed and not over, is a
    problem. The section states no line counts (they would drift), only the rule and the names."""
    size = _section(text, "Size")
    rule = _SIZE_RULE.search(size)
    if not rule:
        return ["the Size section does not state its rule ('A module over N lines or a function over M lines')"]
    module_limit, function_limit = int(rule.group(1)), int(rule.group(2))
    lists = {int(n): body for n, body in _STILL_OVER.findall(size)}
    if set(lists) != {module_limit, function_limit}:
        return [f"the Size section lists 'still over' {sorted(lists)} lines, its rule says "
                f"{module_limit} (modules) and {function_limit} (functions)"]
    problems = []
    for kind, limit, actual, pattern in (
            ("module", module_limit, long_modules(module_limit), r"`(dpcore/[\w/]+\.py)`"),
            ("function", function_limit, long_functions(function_limit), r"`(dpcore(?:\.\w+)+)`")):
        listed = set(re.findall(pattern, lists[limit]))
        problems += [f"{kind} over {limit} lines, not listed: {n}" for n in sorted(actual - listed)]
        problems += [f"{kind} listed as over {limit} lines, but it is not: {n}" for n in sorted(listed - actual)]
    return problems


def test_the_module_map_names_every_module_and_only_modules_that_exist():
    problems = _module_map_problems(ARCH_DOC.read_text(encoding="utf-8"), _code_modules())
    assert not problems, problems


def test_the_size_lists_are_what_the_code_measures():
    problems = _size_problems(ARCH_DOC.read_text(encoding="utf-8"), _long_modules, _long_functions)
    assert not problems, problems


def test_the_architecture_doc_checks_can_fail():
    text = ARCH_DOC.read_text(encoding="utf-8")
    modules = _code_modules()
    # a module the code has and the map does not name; a map row naming a module that is gone
    row = next(line for line in text.splitlines() if line.startswith("| `dpcore/survey/context.py` |"))
    doctored = text.replace(row + "\n", "| `dpcore/survey/gone.py` | a module deleted since |\n")
    assert _module_map_problems(doctored, modules) == ["named but absent: dpcore/survey/gone.py",
                                                       "not in the module map: dpcore/survey/context.py"]
    assert _module_map_problems(text, modules | {"dpcore/new_module.py"}) == [
        "not in the module map: dpcore/new_module.py"]
    # a function grown over the limit, a module shrunk under it, a changed rule
    assert _size_problems(text, _long_modules, lambda n: _long_functions(n) | {"dpcore.previews.preview"}) == [
        "function over 80 lines, not listed: dpcore.previews.preview"]
    assert _size_problems(text, lambda n: _long_modules(n) - {"dpcore/cli/commands.py"}, _long_functions) == [
        "module listed as over 600 lines, but it is not: dpcore/cli/commands.py"]
    assert _size_problems(text.replace("a function over 80 lines", "a function over 60 lines"),
                          _long_modules, _long_functions)[0].startswith("the Size section lists 'still over'")
    assert _size_problems("# x\n\n## Size\n\nsmall.\n", _long_modules, _long_functions)[0].startswith(
        "the Size section does not state its rule")
