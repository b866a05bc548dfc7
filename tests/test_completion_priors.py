"""The completion priors (``completion_priors.py``, issue 56): the committed table loads and
covers every kind in crash and lemon; a malformed table is refused naming the file and the row;
a declared kind gives that kind's tokens a call (a market's own row, else the mock's answer plus
what the kind adds), an undeclared one the middle kind's with a range over every kind."""

from __future__ import annotations

import pytest

from marketarena.completion_priors import (
    COLUMNS,
    KINDS,
    PriorsError,
    answer_tokens,
    load_priors,
)


def test_the_committed_table_covers_every_kind_in_crash_and_lemon():
    table = load_priors()
    for kind in KINDS:
        for market in ("crash", "lemon", "any"):
            row = table[(kind, market)]
            assert row.low <= row.mean <= row.high and row.n_models >= 1
    # the kinds are ordered as their names say, market by market
    for market in ("crash", "lemon"):
        means = [table[(k, market)].mean for k in KINDS]
        assert means == sorted(means) and means[0] > 0


GOOD = "chain_of_thought,crash,100,50,200,0.5,3,1000,test"


@pytest.mark.parametrize(
    "line, said",
    [
        ("deep_thought,crash,100,50,200,0.5,3,1000,test", "row 2 \\(line 3\\): kind"),
        ("thinking,crash,100,150,200,0.5,3,1000,test", "row 2 \\(line 3\\): .*low <= mean <= high"),
        ("thinking,crash,100,50,200,1.5,3,1000,test", "row 2 \\(line 3\\): reasoning_share"),
        ("thinking,crash,lots,50,200,0.5,3,1000,test", "row 2 \\(line 3\\): mean"),
        ("thinking,crash,100,50,200,0.5,3", "row 2 \\(line 3\\): 7 cells, the header has 9"),
        (GOOD, "row 2 \\(line 3\\): a second row for kind chain_of_thought, market crash"),
    ],
)
def test_a_malformed_table_is_refused_naming_the_file_and_row(tmp_path, line, said):
    path = tmp_path / "bad.csv"
    path.write_text("\n".join([",".join(COLUMNS), GOOD, line]) + "\n")
    with pytest.raises(PriorsError, match=rf"bad\.csv: {said}"):
        load_priors(path)


def test_a_table_without_a_row_for_other_markets_or_with_another_header_is_refused(tmp_path):
    path = tmp_path / "short.csv"
    path.write_text("\n".join([",".join(COLUMNS), GOOD]) + "\n")
    with pytest.raises(PriorsError, match=r"short\.csv: no row for market any of kind\(s\) "):
        load_priors(path)
    path = tmp_path / "header.csv"
    path.write_text("kind,market,tokens\n")
    with pytest.raises(PriorsError, match=r"header\.csv: the header must be kind,market,mean"):
        load_priors(path)


def test_a_declared_kind_gives_its_tokens_and_an_undeclared_one_spans_every_kind(tiny_priors):
    # crash has its own rows (conftest.TINY_PRIORS)
    a = answer_tokens("thinking", "crash", mock=12)
    assert (a.point, a.low, a.high) == (400, 300, 500)
    # cournot has none: the mock's answer plus what the kind adds over bare_json's 10
    a = answer_tokens("chain_of_thought", "cournot", mock=12)
    assert (a.point, a.low, a.high) == (12 + 50, 12 + 10, 12 + 140)
    a = answer_tokens("bare_json", "cournot", mock=12)
    assert (a.point, a.low, a.high) == (12, 12, 12 + 5)
    # undeclared: chain_of_thought's point, from the shortest answer to thinking's most
    a = answer_tokens(None, "crash", mock=12)
    assert (a.point, a.low, a.high) == (100, 10, 500)
    a = answer_tokens(None, "crash", mock=8)
    assert a.low == 8  # the mock's answer is shorter than bare_json's least
    assert "answers_like" in a.source
