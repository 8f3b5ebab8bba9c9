"""[privacy-audit] input safety: regression tests for hostile inputs that ended in an
internal error or a misleading message after the reading rules landed."""
import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.data.domain import Domain
from dpcore.data.io import read_csv_bytes
from dpcore.errors import DomainError, InputError, OptionError, ResourceError


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


def test_float_literals_that_overflow_or_underflow_keep_the_column_as_text():
    df = read_csv_bytes(b"v,x\n1e309,a\n2,b\n1e-400,a\n", "f.csv")
    assert list(df["v"]) == ["1e309", "2", "1e-400"]
    assert read_csv_bytes(b"v,x\n1e308,a\n0e5,b\n", "f.csv")["v"].dtype == np.float64


def test_a_second_byte_order_mark_in_the_header_is_refused():
    with pytest.raises(InputError, match="invisible character"):
        read_csv_bytes(b"\xef\xbb\xbf\xef\xbb\xbfa,b\nx,1\n", "b.csv")


def test_unclosed_quote_message_is_not_mistaken_for_an_internal_error():
    with pytest.raises(InputError) as exc:
        read_csv_bytes(b'a,b\n"x,1\ny,2\n', "q.csv")
    assert "quote is not closed" in str(exc.value) and "unexpected" not in str(exc.value)


def test_huge_integral_floats_stay_distinct_levels():
    from dpcore.data.domain import series_level_keys

    keys = series_level_keys(pd.Series([1e300, 1e301, 3.0, 2.5]))
    assert len(set(keys)) == 4 and keys[2] == "3" and keys[3] == "2.5"


def test_infinite_values_are_refused_when_inferring_a_domain():
    df = pd.DataFrame({"v": [1.0, float("inf"), 2.0, np.nan], "x": list("abab")})
    with pytest.raises(DomainError, match="column 'v' holds infinite values"):
        dpcore.infer_domain(df)


@pytest.mark.parametrize("edges,dtype,match", [
    ([-1e308, 1e308], "float64", "span more than a number can hold"),
    ([-1e308, 1e308], "int64", "span more than a number can hold"),
    ([0, 2**60], "int64", "beyond ±2\\^53"),
])
def test_numeric_edges_that_decode_cannot_draw_inside_are_refused(edges, dtype, match):
    attr = '{"name": "age", "type": "numeric", "edges": ' + str(edges) + ', "dtype": "' + dtype + '"}'
    with pytest.raises(DomainError, match="attribute 'age'.*" + match):
        Domain.from_json(_domain_json(attr))


@pytest.mark.parametrize("value", [np.True_, True, 1e10, 1e308, "1"])
def test_epsilon_refuses_bools_strings_and_values_above_the_cap(small, value):
    with pytest.raises(OptionError, match="epsilon"):
        dpcore.synthesize(small, "steps", value, seed=1)


def test_count_share_too_small_for_the_record_count_names_count_share(small):
    with pytest.raises(OptionError, match="count_share"):
        dpcore.synthesize(small, "steps", 1.0, seed=1, count_share=1e-300)


@pytest.mark.parametrize("order", [3, {"a": 1}, [["a", 1]], [3]])
def test_order_of_the_wrong_type_is_an_option_error(small, order):
    with pytest.raises(OptionError, match="order must be"):
        dpcore.synthesize(small, "steps", 1.0, seed=1, order=order)


@pytest.mark.parametrize("domain", [0, 3, [1, 2], 2.5])
def test_a_domain_that_is_not_a_path_is_refused_not_opened_as_a_file_descriptor(small, domain):
    with pytest.raises(DomainError, match="the domain must be"):
        dpcore.synthesize(small, "steps", 1.0, seed=1, domain=domain)


@pytest.mark.parametrize("spec,match", [("a=x:y:2", "--numeric 'a=x:y:2': edges and bounds must be numbers"),
                                        ("a=0:10:2.5", "bins must be a whole number"),
                                        ("a=0,zz", "must be numbers")])
def test_cli_domain_numeric_specs_are_one_line_errors(spec, match, tmp_path, capsys):
    from dpcore.cli.commands import main

    src = tmp_path / "t.csv"
    src.write_text("a,b\n1,x\n2,y\n")
    assert main(["domain", str(src), "--out", str(tmp_path / "d.json"), "--numeric", spec]) == 2
    err = capsys.readouterr().err
    assert match in err and "unexpected" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv", [["domain", "{src}", "--out", "{src}/d.json"],
                                  ["synth", "{src}", "--out", "{tmp}/o", "--private-manifest", "{src}/p.json"],
                                  ["synth", "{src}", "--out", "{tmp}/o", "--private-manifest", "{tmp}"]])
def test_cli_output_paths_inside_a_file_are_one_line_errors_before_any_release(argv, tmp_path, capsys):
    from dpcore.cli.commands import main

    src = tmp_path / "t.csv"
    src.write_text("a,b\nx,u\ny,v\nx,v\n")
    argv = [a.format(src=src, tmp=tmp_path) for a in argv]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert ("--out" in err or "--private-manifest" in err) and "unexpected" not in err and "ε spent" not in out
    assert not (tmp_path / "o").exists()


def test_cli_says_which_delimiter_it_read(tmp_path, capsys):
    from dpcore.cli.commands import main

    src = tmp_path / "t.csv"
    src.write_text("a;b\nx;u\ny;v\nx;v\n")
    assert main(["domain", str(src), "--out", str(tmp_path / "d.json")]) == 0
    assert "as semicolon-separated" in capsys.readouterr().out


@pytest.mark.parametrize("values", [["+44", "+1", "+33"], ["-0", "1", "2"], ["+1.5", "2.5", "3"]])
def test_signs_a_number_would_drop_keep_the_column_as_text(values):
    text = "code,x\n" + "".join(f"{v},{c}\n" for v, c in zip(values, "aba"))
    assert list(read_csv_bytes(text.encode(), "c.csv")["code"]) == values


@pytest.mark.parametrize("kwargs,match", [({"reps": 2.5}, "reps"), ({"reps": True}, "reps"), ({"reps": 10**6}, "reps"),
                                          ({"epsilons": [True]}, "epsilon"), ({"epsilons": ["1"]}, "epsilon"),
                                          ({"epsilons": []}, "epsilons")])
def test_sweep_checks_reps_and_epsilons_with_the_shared_helpers(small, kwargs, match):
    from dpcore.metrics.sweep import sweep

    kw = {"methods": ["flat_laplace"], "epsilons": [1.0], "reps": 1, **kwargs}
    with pytest.raises(OptionError, match=match):
        sweep(small, **kw)
