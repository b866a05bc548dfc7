"""Foreign files read as untrusted data (``core/sources.py``): every refusal names the file and
the line, whatever the fast path of the reader does."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from marketarena.core.sources import (
    Seen,
    SourceError,
    number,
    plain_name,
    read_json,
    read_jsonl,
    validated,
)


def _jsonl(tmp_path, text: str | bytes):
    path = tmp_path / "games.jsonl"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def test_records_come_with_their_line_numbers(tmp_path):
    path = _jsonl(tmp_path, '{"a": 1}\n\n{"b": [1, 2]}\n  \n{"c": null}\n')
    assert list(read_jsonl(path)) == [(1, {"a": 1}), (3, {"b": [1, 2]}), (5, {"c": None})]


@pytest.mark.parametrize(
    "text, line, what",
    [
        ('{"a": 1}\n{"a": NaN}\n', 2, "NaN is not a JSON number"),
        ('{"a": 1}\n{"a": -Infinity}\n', 2, "-Infinity is not a JSON number"),
        ('{"a": 1}\n{"a": 1}, {"b": 2}\n{"c": 3}\n', 2, "Extra data"),  # two values on one line
        ('{"a": [1,\n2]}\n', 1, "Expecting value"),  # a record over two lines is not JSONL
        ('{"a": 1}\n[1, 2]\n', 2, "a record must be a JSON object, not list"),
        ('{"a": 1}\n"text"\n', 2, "a record must be a JSON object, not str"),
        ('{"a": 1}\n{"a": 1]\n', 2, "not valid JSON"),
        ('{"a": 1}\n1],[2\n', 2, "not valid JSON"),
        ('{"a":[1\n2]}, {"c":3}\n', 1, "not valid JSON"),  # two halves that join as an array
    ],
)
def test_a_bad_line_is_named_even_when_the_whole_file_parses_as_an_array(
    tmp_path, text, line, what
):
    with pytest.raises(SourceError, match=rf"games.jsonl:{line}: .*{what}"):
        list(read_jsonl(_jsonl(tmp_path, text)))


def test_binary_and_oversized_files_are_refused_before_parsing(tmp_path):
    path = _jsonl(tmp_path, b'{"a": 1}\n{"a": "\xff\xfe"}\n')
    with pytest.raises(SourceError, match=r"games.jsonl:2: is not UTF-8 text"):
        list(read_jsonl(path))
    path = _jsonl(tmp_path, '{"a": "' + "x" * 2000 + '"}\n')
    with pytest.raises(SourceError, match=r"games.jsonl: is 0.0 MiB, over the 0 MiB"):
        list(read_jsonl(path, max_bytes=1000))
    with pytest.raises(SourceError, match=r"games.jsonl:1: a line of"):
        list(read_jsonl(path, max_line_bytes=1000))
    wide = _jsonl(tmp_path, '{"a": "' + "é" * 600 + '"}\n')  # 600 characters, 1,209 bytes
    with pytest.raises(SourceError, match=r"games.jsonl:1: a line of"):
        list(read_jsonl(wide, max_line_bytes=1000))
    assert len(list(read_jsonl(wide, max_line_bytes=1209))) == 1
    (tmp_path / "s.json").write_text('{"a": Infinity}')
    with pytest.raises(SourceError, match=r"s.json: not valid JSON: Infinity"):
        read_json(tmp_path / "s.json")


def test_numbers_are_finite_in_range_and_integers_where_meant():
    assert number(3, "q", 0, 100, integer=True) == 3
    assert number(48.0, "price", 0, 100, integer=True) == 48
    for bad, match in (
        (True, "not a number"),
        ("12", "not a number"),
        (float("nan"), "finite"),
        (float("inf"), "finite"),
        (1e308, r"outside \[0, 100\]"),
        (-1, r"outside \[0, 100\]"),
        (47.5, "not an integer"),
    ):
        with pytest.raises(ValueError, match=match):
            number(bad, "quote", 0, 100, integer=True)


def test_ids_from_foreign_files_are_plain_names():
    assert plain_name("claude-sonnet-4.6", "model") == "claude-sonnet-4.6"
    for bad in ("../x", "a/b", ".hidden", "<script>", "", "x" * 129, 5, "a b"):
        with pytest.raises(ValueError, match="not a plain name"):
            plain_name(bad, "model")


def test_validated_names_the_key_path_and_the_value(tmp_path):
    class Rec(BaseModel):
        rounds: int = Field(ge=1, le=10)

    with pytest.raises(
        SourceError,
        match=r"f.jsonl:7: data.rounds: Input should be less than "
        r"or equal to 10 \(got '99'\)",
    ):
        validated(Rec, {"rounds": 99}, tmp_path / "f.jsonl", 7, "data")


def test_the_same_game_in_two_files_is_refused_naming_both():
    seen = Seen("run")
    seen.add("g1", "a.jsonl")
    seen.add("g1", "a.jsonl")  # the same file again: no duplicate
    with pytest.raises(SourceError, match=r"b.jsonl: holds run 'g1', which a.jsonl holds too"):
        seen.add("g1", "b.jsonl")


def test_the_error_crosses_process_boundaries_whole():
    """A worker process's ``SourceError`` re-raised in its parent (pickled) keeps its text."""
    import pickle

    err = pickle.loads(pickle.dumps(SourceError("a/b.json", "not valid JSON", 3)))
    assert (str(err), err.path, err.what, err.line) == (
        "a/b.json:3: not valid JSON",
        "a/b.json",
        "not valid JSON",
        3,
    )
