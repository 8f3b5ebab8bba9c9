"""[privacy-audit] input safety: regression tests for hostile inputs that ended in an
internal error or a misleading message after the reading rules landed."""
import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.domain import Domain
from dpcore.errors import DomainError, InputError, OptionError, ResourceError
from dpcore.io import read_csv_bytes


def _domain_json(attr: str) -> str:
    return '{"source": "declared", "attributes": [' + attr + "]}"


@pytest.mark.parametrize("data", ["a,b\nx,1\n".encode("utf-16-le"), "a,b\nx,1\n".encode("utf-16-be"),
                                  b"a,b\nx\x00,1\ny,2\n"])
def test_utf16_without_bom_and_nul_bytes_are_refused_not_read_as_ragged(data):
    with pytest.raises(InputError, match="NUL bytes.*UTF-8"):
        read_csv_bytes(data, "u.csv")


def test_utf32_with_bom_is_read():
    df = read_csv_bytes("a,b\nä,1\nö,2\n".encode("utf-32"), "u.csv")
    assert list(df["a"]) == ["ä", "ö"] and list(df["b"]) == [1, 2]


@pytest.mark.parametrize("data,sep", [(b'"a;b"\nx\ny\n', None), (b"a;b\nx;1\ny;2\n", ","),
                                      (b'"a\tb"\nx\ny\n', None), (b'"a|b"\nx\ny\n', None)])
def test_one_column_whose_name_holds_a_delimiter_is_refused_before_the_layers_check(data, sep):
    with pytest.raises(InputError, match="one column named .*contains a (semicolon|tab|pipe)"):
        read_csv_bytes(data, "d.csv", sep=sep)


def test_unsupported_explicit_delimiter_is_refused():
    with pytest.raises(InputError, match="delimiter 'x' is not supported"):
        read_csv_bytes(b"axb\n1x2\n", "d.csv", sep="x")


@pytest.mark.parametrize("attr,match", [
    ('{"name": "a", "type": "numeric", "edges": [0, ' + "9" * 400 + "]}", "attribute 'a': an edge is too large"),
    ('{"name": "a", "levels": [' + "9" * 5000 + ", 1]}", "too many digits"),
    ('{"name": "a", "levels": ["u", "v"], "dtype": "int64"}', "attribute 'a'.*whole-number levels"),
    ('{"name": "a", "levels": [1, ' + str(2**70) + '], "dtype": "int64"}', "attribute 'a'.*within 64 bits"),
    ('{"name": "a", "levels": ["u", 1.5], "dtype": "float64"}', "attribute 'a'.*number levels"),
    ('{"name": "a", "levels": ["u", "v"], "dtype": "datetime64[ns]"}', "attribute 'a'.*not a column type"),
    ('{"name": "a", "type": "numeric", "edges": [0, 1], "dtype": "object"}', "attribute 'a'.*int64.*float64"),
])
def test_domain_file_values_that_cannot_be_written_back_are_refused(attr, match):
    with pytest.raises(DomainError, match=match):
        Domain.from_json(_domain_json(attr))


def test_huge_integer_levels_declared_as_text_round_trip():
    ids = ["12345678901234567678", "12345678901234567679", "12345678901234567680"]
    df = read_csv_bytes(("id,x\n" + "".join(f"{i},{c}\n" for i in ids for c in "ab")).encode(), "ids.csv")
    dom = Domain.from_json(dpcore.infer_domain(df).declared().to_json())
    assert dom["id"].levels == tuple(ids)
    rel = dpcore.synthesize(df, "flat_laplace", 50.0, seed=1, domain=dom, neighbours="replace", prior=0)
    assert set(rel.sets[0]["id"]) <= set(ids) and len(set(rel.sets[0]["id"])) >= 2


@pytest.fixture(scope="module")
def small():
    return pd.DataFrame({"a": list("xyxyxy"), "b": list("uvvuuv")})


@pytest.mark.parametrize("method", ["steps", "flat_laplace", "ipf"])
@pytest.mark.parametrize("value", ["1e3", True, 2.5, float("nan")])
def test_max_cells_must_be_a_whole_number(small, method, value):
    with pytest.raises(OptionError, match="max_cells must be a whole number"):
        dpcore.synthesize(small, method, 1.0, seed=1, max_cells=value)


def test_max_cells_accepts_numpy_and_integral_floats(small):
    for v in (np.int64(1000), 1000.0):
        assert dpcore.synthesize(small, "steps", 1.0, seed=1, max_cells=v).sets


@pytest.mark.parametrize("value", [5, "x", [True, 1], [0.5, "half"], {"a": 1}])
def test_allocation_of_the_wrong_type_is_an_option_error(small, value):
    with pytest.raises(OptionError, match="allocation"):
        dpcore.synthesize(small, "steps", 1.0, seed=1, allocation=value)


def test_astronomical_cell_counts_are_one_clear_resource_error():
    wide = pd.DataFrame(np.random.default_rng(0).integers(0, 2, (20, 900)).astype(str),
                        columns=[f"c{i}" for i in range(900)])
    for method in ("flat_laplace", "ipf"):
        with pytest.raises(ResourceError) as exc:
            dpcore.synthesize(wide, method, 1.0, seed=1)
        msg = str(exc.value)
        assert "about 10^" in msg and "about about" not in msg and len(msg.splitlines()) == 1
