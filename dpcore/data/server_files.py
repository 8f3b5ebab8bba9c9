"""Tables on the server: files inside one configured data folder, never outside it.

The app cannot take a 10^7-row file through a browser upload; the curator names a
file inside the folder given by the environment variable ``DPSTUDIO_DATA_DIR`` and
DuckDB counts it there. A path is resolved with its symlinks and ``..`` first and
refused unless it lies inside the (resolved) folder; releases go to
``DPSTUDIO_OUTPUT_DIR`` (default: ``releases/`` inside the data folder).

Privacy: this module only finds files; nothing is read or released here.
"""
from __future__ import annotations

import os
from pathlib import Path

from dpcore.data.io import PARQUET_SUFFIXES
from dpcore.errors import InputError

DATA_DIR_ENV = "DPSTUDIO_DATA_DIR"
OUTPUT_DIR_ENV = "DPSTUDIO_OUTPUT_DIR"
SUFFIXES = (".csv", ".tsv", ".txt") + PARQUET_SUFFIXES


def data_dir(environ=None) -> Path | None:
    """The configured data folder (resolved), or None when the variable is unset."""
    env = os.environ if environ is None else environ
    raw = env.get(DATA_DIR_ENV, "").strip()
    if not raw:
        return None
    d = Path(raw).expanduser().resolve()
    if not d.is_dir():
        raise InputError(f"{DATA_DIR_ENV}={raw!r} is not a folder on this server; "
                         "set it to the folder holding the tables")
    return d


def output_dir(environ=None) -> Path | None:
    env = os.environ if environ is None else environ
    raw = env.get(OUTPUT_DIR_ENV, "").strip()
    if raw:
        return Path(raw).expanduser().resolve()
    d = data_dir(env)
    return None if d is None else d / "releases"


def resolve_inside(folder: Path, name: str) -> Path:
    """``name`` (relative to ``folder``) as a real file inside ``folder``; symlinks and ``..``
    are resolved first, so neither can lead outside. Anything else is an InputError."""
    if not str(name).strip():
        raise InputError("give the path of a table inside the data folder")
    root = Path(folder).resolve()
    target = (root / str(name).strip()).resolve()
    if target != root and root not in target.parents:
        raise InputError(f"'{name}' is outside the data folder {root}; only tables inside it can be read")
    if not target.is_file():
        raise InputError(f"'{name}' is not a file in the data folder {root}")
    if target.suffix.lower() not in SUFFIXES:
        raise InputError(f"'{name}' is not a CSV or Parquet file ({', '.join(SUFFIXES)})")
    return target


def list_tables(folder: Path, limit: int = 500) -> list[str]:
    """CSV and Parquet files under ``folder`` (relative paths, sorted; symlinks leading out skipped)."""
    root = Path(folder).resolve()
    out = []
    for p in sorted(root.rglob("*")):
        if p.suffix.lower() in SUFFIXES and p.is_file():
            real = p.resolve()
            if root in real.parents:
                out.append(str(p.relative_to(root)))
        if len(out) >= limit:
            break
    return out
