"""The expectations file: known failures by clause, each with a reason; nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance._expectations import Expectation, ExpectationsError, load_expectations, names_test, refuse_must_entries

GOOD = """
[[expected_failure]]
clause = "GATE-2"
reason = "refusal text does not mention discovery yet"

[[expected_failure]]
clause = "POL-5"
reason = "read-only filtering lands in 2.3"
test = "test_selection.py::test_read_only_needs_the_json_boolean_true"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "expected.toml"
    path.write_text(text)
    return path


def test_a_good_file_gives_its_entries_in_order(tmp_path: Path) -> None:
    entries = load_expectations(write(tmp_path, GOOD))

    assert entries == (
        Expectation("GATE-2", "refusal text does not mention discovery yet", None, 0),
        Expectation(
            "POL-5",
            "read-only filtering lands in 2.3",
            "test_selection.py::test_read_only_needs_the_json_boolean_true",
            1,
        ),
    )


def test_an_empty_file_lists_nothing(tmp_path: Path) -> None:
    assert load_expectations(write(tmp_path, "")) == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("clause = [", "not a TOML file"),
        ("[[expected_failures]]\nclause = 'POL-5'\nreason = 'x'\n", "unknown key 'expected_failures'"),
        ("[[expected_failure]]\nclause = 'POL-5'\nreason = 'x'\nwhy = 'y'\n", "expected_failure[0]: unknown key 'why'"),
        ("[[expected_failure]]\nclause = 'POL-5'\n", "expected_failure[0].reason: missing"),
        ("[[expected_failure]]\nclause = 'POL-5'\nreason = '  '\n", "expected_failure[0].reason: missing"),
        ("[[expected_failure]]\nreason = 'x'\n", "expected_failure[0].clause: missing"),
        (
            "[[expected_failure]]\nclause = 'POL-55'\nreason = 'x'\n",
            "'POL-55' is not a clause of SPEC.md; did you mean",
        ),
        (
            "[[expected_failure]]\nclause = 'POL-5'\nreason = 'x'\ntest = 3\n",
            "expected_failure[0].test: must be a test id",
        ),
        ("expected_failure = 'POL-5'\n", "must be an array of tables"),
        (
            "[[expected_failure]]\nclause = 'POL-5'\nreason = 'x'\n[[expected_failure]]\nclause = 'POL-5'\nreason = 'y'\n",
            "expected_failure[1]: clause 'POL-5' is listed twice",
        ),
    ],
)
def test_a_bad_file_is_refused_naming_the_file_and_the_field(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)

    with pytest.raises(ExpectationsError) as caught:
        load_expectations(path)

    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ExpectationsError, match="cannot read the expectations file"):
        load_expectations(tmp_path / "nope.toml")


def test_certification_refuses_entries_on_must_clauses(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    entries = load_expectations(path)

    with pytest.raises(ExpectationsError, match=r"expected_failure\[1\] \(POL-5\).*MUST.*--mode regression"):
        refuse_must_entries(path, entries)
    refuse_must_entries(path, entries[:1])  # GATE-2 is a SHOULD: accepted


@pytest.mark.parametrize(
    "pattern",
    [
        "conformance/suite/test_selection.py::test_read_only[http]",
        "conformance/suite/test_selection.py::test_read_only",
        "suite/test_selection.py::test_read_only",
        "test_selection.py::test_read_only",
        "test_selection::test_read_only",
        "test_read_only",
        "test_read_only[http]",
    ],
)
def test_an_entry_names_a_test_by_node_id_tail_or_module_and_function(pattern: str) -> None:
    assert names_test(pattern, "conformance/suite/test_selection.py::test_read_only[http]")
    assert not names_test(pattern, "conformance/suite/test_selection.py::test_read_only_more")
