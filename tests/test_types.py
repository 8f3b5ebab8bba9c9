"""[typed-contracts]: the types hold. mypy passes as ``make lint`` runs it (``mypy.api.run`` with no file
arguments reads pyproject.toml's [tool.mypy]), and the privacy and measure layers are checked as
``mypy --strict`` would check them: pyproject.toml turns on each of --strict's flags for
``dpcore.privacy.*`` and ``dpcore.measure.*`` (``strict = true`` cannot be set per module). A case file that
breaks those flags gives, under the project's settings, the same errors inside dpcore/privacy and dpcore/measure
as ``--strict`` gives under the global settings alone, and none of them in dpcore/estimate (the negative
control)."""
from __future__ import annotations

import json
import re
import textwrap
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
STRICT_PACKAGES = ("dpcore.privacy.*", "dpcore.measure.*")
#: --strict's flags that can be set per module (mypy --help lists --strict's; warn_unused_configs and
#: warn_redundant_casts are global only)
STRICT_FLAGS = ("disallow_any_generics", "disallow_subclassing_any", "disallow_untyped_calls",
                "disallow_untyped_defs", "disallow_incomplete_defs", "check_untyped_defs",
                "disallow_untyped_decorators", "warn_unused_ignores", "warn_return_any", "no_implicit_reexport",
                "strict_equality", "extra_checks")

#: breaks each flag above that a single module can break (subclassing Any and untyped decorators need an
#: untyped import: ``untyped_lib`` is not installed, so it is Any under ignore_missing_imports)
CASE = '''
from typing import Any

from untyped_lib import Base, decorate

from . import helper
from .helper import List


def untyped(x):
    return x


def incomplete(x: int, y):
    return x


def generic(x: dict) -> list:
    return [x]


def any_return(x: Any) -> int:
    return x


def calls_untyped() -> None:
    untyped(1)


def equality(x: int) -> bool:
    return x == "a"


class Sub(Base):
    pass


@decorate
def decorated() -> None:
    pass


def reexport() -> List[int]:
    return helper.List()
'''
HELPER = "from typing import List\n"


def _mypy(args: list[str]) -> tuple[int, str]:
    from mypy import api

    out, err, status = api.run(args)
    return status, out + err


def _errors(out: str) -> set[tuple[int, str]]:
    """(line, error code) of every error mypy reported."""
    return {(int(m[1]), m[2]) for m in re.finditer(r"^[^:\n]+:(\d+): error: .*\[([a-z-]+)\]$", out, re.M)}


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    """The case file as a module of dpcore.privacy, of dpcore.measure and of dpcore.estimate (a package tree of
    its own: nothing of the real dpcore is read)."""
    root = tmp_path_factory.mktemp("typed")
    for pkg in ("privacy", "measure", "estimate"):
        d = root / "dpcore" / pkg
        d.mkdir(parents=True)
        (d / "__init__.py").write_text("")
        (d / "case.py").write_text(textwrap.dedent(CASE).lstrip())
        (d / "helper.py").write_text(HELPER)
    (root / "dpcore" / "__init__.py").write_text("")
    # the reference: --strict under the project's global settings alone (no per-module overrides)
    settings = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["mypy"]
    lines = ["[tool.mypy]"] + [f"{k} = {json.dumps(v)}" for k, v in settings.items() if k not in ("files", "overrides")]
    (root / "global_only.toml").write_text("\n".join(lines) + "\n")
    return root


def _check(root: Path, pkg: str, *extra: str, config: Path = PYPROJECT) -> tuple[int, str]:
    return _mypy([*extra, "--config-file", str(config), "--cache-dir", str(root / f".cache-{pkg}"),
                  "--no-incremental", str(root / "dpcore" / pkg / "case.py")])


def test_pyproject_turns_on_the_strict_flags_for_privacy_and_measure():
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["mypy"]
    for package in STRICT_PACKAGES:
        flags: dict[str, object] = {}
        for override in config.get("overrides", []):
            modules = override["module"]
            if package in ([modules] if isinstance(modules, str) else modules):
                flags.update(override)
        missing = [f for f in STRICT_FLAGS if flags.get(f) is not True]
        assert not missing, f"{package}: pyproject.toml's [[tool.mypy.overrides]] lacks {missing}"
    assert config.get("warn_redundant_casts") is True  # --strict's, global only


@pytest.mark.parametrize("pkg", ["privacy", "measure"])
def test_the_project_settings_check_privacy_and_measure_as_strict_does(cases, pkg):
    status, out = _check(cases, pkg)
    assert status == 1, out
    strict_status, strict_out = _check(cases, pkg, "--strict", config=cases / "global_only.toml")
    assert _errors(out) == _errors(strict_out), (out, strict_out)
    codes = {code for _, code in _errors(out)}
    # every flag the case breaks is reported: untyped and incomplete defs, generics without arguments, Any
    # returned, an untyped call, a non-overlapping comparison, subclassing Any, an untyped decorator, an
    # implicit re-export
    assert {"no-untyped-def", "type-arg", "no-any-return", "no-untyped-call", "comparison-overlap", "misc",
            "untyped-decorator", "attr-defined"} <= codes, out


def test_estimate_is_checked_without_the_strict_flags(cases):
    """The negative control: the same file in dpcore/estimate passes under the project's settings, so the errors
    above come from the overrides."""
    status, out = _check(cases, "estimate")
    assert status == 0, out


def test_mypy_passes_as_make_lint_runs_it(tmp_path, monkeypatch):
    """``make lint`` runs ``mypy`` with no arguments: the files and settings of pyproject.toml."""
    monkeypatch.chdir(ROOT)
    status, out = _mypy(["--cache-dir", str(tmp_path / ".mypy_cache")])
    assert status == 0, out
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["mypy"]
    for path in ("dpcore/privacy", "dpcore/measure", "dpcore/estimate", "dpcore/synthesizers", "dpcore/studio",
                 "dpcore/api.py", "dpcore/release.py"):
        assert path in config["files"]
