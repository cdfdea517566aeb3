"""``--clause ID``: only the tests citing one of the given clauses run."""

from __future__ import annotations

import pytest

from tests.conformance.conftest import FAKE_SUT, INI

pytest_plugins = ["pytester"]

CITING_TESTS = """
import pytest

from conformance import clause


@clause("BUD-1")
def test_budget(sut):
    pass


@clause("POL-5", "BUD-3")
def test_policy_and_request(sut):
    pass


@clause("GATE-1")
@pytest.mark.parametrize("n", [1, 2])
def test_gate(sut, n):
    pass


def test_uncited(sut):
    pass
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(INI)
    pytester.makepyfile(fake_sut=FAKE_SUT, test_citing=CITING_TESTS)
    pytester.syspathinsert()
    return pytester


def test_only_tests_citing_the_clause_run(project: pytest.Pytester) -> None:
    result = project.runpytest("--sut", "fake_sut:lexical", "--clause", "BUD-1", "-v", "test_citing.py")

    result.assert_outcomes(passed=1, deselected=4)
    result.stdout.fnmatch_lines(["*test_citing.py::test_budget PASSED*"])


def test_a_clause_cited_among_others_selects_the_test(project: pytest.Pytester) -> None:
    result = project.runpytest("--sut", "fake_sut:lexical", "--clause", "BUD-3", "-v", "test_citing.py")

    result.assert_outcomes(passed=1, deselected=4)
    result.stdout.fnmatch_lines(["*test_citing.py::test_policy_and_request PASSED*"])


def test_the_option_repeats_and_keeps_every_parametrized_case(project: pytest.Pytester) -> None:
    result = project.runpytest(
        "--sut", "fake_sut:lexical", "--clause", "BUD-1", "--clause", "GATE-1", "-v", "test_citing.py"
    )

    result.assert_outcomes(passed=3, deselected=2)
    result.stdout.fnmatch_lines(["*test_gate?1? PASSED*", "*test_gate?2? PASSED*"])


def test_a_clause_no_test_cites_runs_nothing(project: pytest.Pytester) -> None:
    result = project.runpytest("--sut", "fake_sut:lexical", "--clause", "ISO-1", "test_citing.py")

    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.assert_outcomes(deselected=5)


def test_collect_only_lists_the_selected_tests(project: pytest.Pytester) -> None:
    result = project.runpytest(
        "--sut", "fake_sut:lexical", "--clause", "POL-5", "--collect-only", "-q", "test_citing.py"
    )

    result.stdout.fnmatch_lines(["test_citing.py::test_policy_and_request", "1/5 tests collected (4 deselected)*"])


def test_without_the_option_every_test_runs(project: pytest.Pytester) -> None:
    result = project.runpytest("--sut", "fake_sut:lexical", "test_citing.py")

    result.assert_outcomes(passed=5)


def test_it_also_works_without_a_sut(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_plain="import pytest\n\n@pytest.mark.clause('BUD-1')\ndef test_a():\n    pass\n\ndef test_b():\n    pass\n"
    )

    result = project.runpytest("--clause", "BUD-1", "test_plain.py")

    result.assert_outcomes(passed=1, deselected=1)


def test_an_unknown_clause_id_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--sut", "fake_sut:lexical", "--clause", "BUD-99", "test_citing.py")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: mcp-conformance: --clause BUD-99: not a clause or sentence of SPEC.md*"])


def test_the_option_is_listed_in_the_plugins_group(project: pytest.Pytester) -> None:
    result = project.runpytest("--help")

    result.stdout.fnmatch_lines(["adaptive MCP toolset conformance:", "  --clause=ID*"])
