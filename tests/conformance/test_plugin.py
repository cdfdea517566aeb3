from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conformance._procs import is_running
from tests.conformance.conftest import FAKE_DRIVER_ARGV, FAKE_SUT, INI

pytest_plugins = ["pytester"]

PROFILE_TESTS = """
from conformance import clause


@clause("SEL-4")
def test_core(sut):
    pass


@clause("SEL-5", "SEL-4")
def test_lexical(sut):
    pass
"""

# The shipped suite's protocol smoke test: the only one a fake SUT can pass.
SMOKE = "test_initialize_claims_the_core_profile"
FAKE_DRIVER_CMD = shlex.join(FAKE_DRIVER_ARGV)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with the in-process fake SUT importable and pytest-asyncio configured."""
    pytester.makeini(INI)
    pytester.makepyfile(fake_sut=FAKE_SUT)
    pytester.syspathinsert()
    return pytester


def test_without_a_sut_the_plugin_leaves_the_session_alone(project: pytest.Pytester) -> None:
    project.makepyfile(test_plain="def test_plain():\n    pass\n")

    result = project.runpytest()

    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*mcp-conformance*")


def test_the_sut_fixture_without_a_sut_says_how_to_name_one(project: pytest.Pytester) -> None:
    project.makepyfile(test_needs_sut="def test_needs_sut(sut):\n    pass\n")

    result = project.runpytest()

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*no system under test: run pytest with --sut MODULE:FACTORY or --sut-cmd COMMAND*"])


def test_the_clause_marker_is_registered_with_its_help(project: pytest.Pytester) -> None:
    project.makepyfile(test_marked="import pytest\n\n@pytest.mark.clause('BUD-1')\ndef test_marked():\n    pass\n")

    markers = project.runpytest("--markers")
    strict = project.runpytest("--strict-markers")

    markers.stdout.fnmatch_lines(["@pytest.mark.clause(*ids): the clauses of the adaptive-toolset specification*"])
    strict.assert_outcomes(passed=1)


def test_the_options_are_listed_in_their_own_group(project: pytest.Pytester) -> None:
    result = project.runpytest("--help")

    result.stdout.fnmatch_lines(
        [
            "adaptive MCP toolset conformance:",
            "  --sut=SPEC*",
            "  --sut-cmd=COMMAND*",
            "  --profile=PROFILE*",
            "  --sut-timeout=SECONDS*",
            "  --clause=ID*",
            "  --conformance-thoroughness=LEVEL*",
            "  --conformance-shrink-time=SECONDS*",
            "  --conformance-max-time=SECONDS*",
        ]
    )
    result.stdout.fnmatch_lines(["  conformance_sut (string):*", "  conformance_sut_cmd (string):*"])


def test_every_option_has_an_ini_twin(project: pytest.Pytester) -> None:
    from conformance._options import OPTIONS

    result = project.runpytest("--help")

    for option in OPTIONS:
        result.stdout.fnmatch_lines([f"  {option.dest} (*):*"])


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sut", "fake_sut:core", "--sut-cmd", "driver"], "*give either --sut or --sut-cmd, not both*"),
        (["--sut", "fake_sut:core", "--sut-timeout", "soon"], "*--sut-timeout must be a positive number*'soon'*"),
        (["--sut", "fake_sut:core", "--sut-timeout", "-1"], "*--sut-timeout must be a positive number*"),
        (
            ["--sut", "fake_sut:core", "--sut-timeout", "1e308"],
            "*--sut-timeout must be a positive number of seconds, at most 86400, got '1e308'*",
        ),
        (["--sut", "fake_sut:core", "--conformance-broken-after", "9" * 400], "*--conformance-broken-after must be*"),
        (["--sut", "fake_sut"], "*--sut expects 'module:factory'*"),
        (["--sut", "fake_sut:broken"], "*broken() raised RuntimeError: cannot reach the toolset*"),
        (["--sut-cmd", "/nonexistent/driver"], "*cannot start driver '/nonexistent/driver'*"),
    ],
)
def test_a_bad_option_or_a_sut_that_does_not_start_stops_the_session_with_a_clear_message(
    project: pytest.Pytester, args: list[str], message: str
) -> None:
    result = project.runpytest(*args)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


@pytest.mark.e2e
def test_a_driver_that_never_answers_initialize_stops_the_session(project: pytest.Pytester) -> None:
    # Waited out, so short; long enough for a loaded machine to start the driver and let it
    # write its stderr line.
    result = project.runpytest("--sut-cmd", f"{FAKE_DRIVER_CMD} silent", "--sut-timeout", "3")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *did not answer initialize within 3 s*", "*thinking about initialize*"])


def test_with_a_sut_and_no_paths_the_shipped_suite_runs(project: pytest.Pytester) -> None:
    project.makepyfile(test_local="def test_local():\n    raise AssertionError('not collected')\n")

    result = project.runpytest("--sut", "fake_sut:core", "-v", "-k", SMOKE)

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "mcp-conformance: --sut fake_sut:core: fake-sut 9.9, claims core",
            "mcp-conformance: profiles under test: core (as claimed); per-call timeout 30 s",
            "*test_protocol.py::test_initialize_claims_the_core_profile PASSED*",
        ]
    )


def test_the_ini_file_can_name_the_sut_and_its_timeout(project: pytest.Pytester) -> None:
    project.makeini(INI + "conformance_sut = fake_sut:lexical\nconformance_sut_timeout = 4\n")

    result = project.runpytest("-k", SMOKE)

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["mcp-conformance: profiles under test: core, lexical (as claimed); per-call timeout 4 s"]
    )


def test_tests_of_a_profile_the_sut_does_not_claim_are_skipped_as_not_applicable(project: pytest.Pytester) -> None:
    project.makepyfile(test_profiles=PROFILE_TESTS)

    result = project.runpytest("--sut", "fake_sut:core", "-rs", "test_profiles.py")

    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED * not applicable: fake-sut does not claim the 'lexical' profile"])


def test_tests_of_a_claimed_profile_run(project: pytest.Pytester) -> None:
    project.makepyfile(test_profiles=PROFILE_TESTS)

    result = project.runpytest("--sut", "fake_sut:lexical", "test_profiles.py")

    result.assert_outcomes(passed=2)


@pytest.mark.parametrize(("profile", "outcomes"), [("core", (1, 1)), ("lexical", (1, 1)), ("all", (2, 0))])
def test_an_explicit_profile_decides_which_tests_run(
    project: pytest.Pytester, profile: str, outcomes: tuple[int, int]
) -> None:
    project.makepyfile(test_profiles=PROFILE_TESTS)

    result = project.runpytest("--sut", "fake_sut:lexical", "--profile", profile, "-rs", "test_profiles.py")

    result.assert_outcomes(passed=outcomes[0], skipped=outcomes[1])
    if outcomes[1]:
        result.stdout.fnmatch_lines([f"SKIPPED * not applicable: profile * is not under test (--profile {profile})"])


EVICTION_TEST = """

@clause("EVC-1")
def test_eviction(sut):
    pass
"""


def test_every_profile_given_runs_its_tests_and_only_those(project: pytest.Pytester) -> None:
    project.makepyfile(test_profiles=PROFILE_TESTS + EVICTION_TEST)

    result = project.runpytest(
        "--sut", "fake_sut:core", "--profile", "eviction", "--profile", "lexical", "-rs", "test_profiles.py"
    )

    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(
        ["SKIPPED * not applicable: profile 'core' is not under test (--profile eviction --profile lexical)"]
    )


def test_the_ini_file_names_several_profiles_on_one_line(project: pytest.Pytester) -> None:
    project.makepyfile(test_profiles=PROFILE_TESTS + EVICTION_TEST)
    project.makeini(INI + "conformance_profile = core eviction\n")

    result = project.runpytest("--sut", "fake_sut:core", "-rs", "test_profiles.py")

    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED * not applicable: profile 'lexical' is not under test (--profile core*)"])


def test_an_unknown_profile_among_several_is_a_usage_error_naming_it(project: pytest.Pytester) -> None:
    project.makepyfile(test_profiles=PROFILE_TESTS)

    result = project.runpytest("--sut", "fake_sut:core", "--profile", "core", "--profile", "fast", "test_profiles.py")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--profile must be one of core, lexical, eviction, refresh, all, got 'fast'*"])


def test_a_test_citing_an_unknown_clause_through_the_raw_marker_stops_the_session(project: pytest.Pytester) -> None:
    project.makepyfile(test_raw="import pytest\n\n@pytest.mark.clause('NOPE-1')\ndef test_raw():\n    pass\n")

    result = project.runpytest("--sut", "fake_sut:core", "test_raw.py")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: mcp-conformance: test_raw.py::test_raw: unknown clause id 'NOPE-1'*"])


def test_the_clauses_of_a_test_are_recorded_for_junit_xml(project: pytest.Pytester) -> None:
    project.makepyfile(test_profiles=PROFILE_TESTS)

    project.runpytest("--sut", "fake_sut:lexical", "--junitxml=report.xml", "test_profiles.py")

    report = (project.path / "report.xml").read_text()
    assert '<property name="clauses" value="SEL-5 SEL-4" />' in report


def test_a_run_the_test_left_open_is_closed_after_it(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_leaky="""
        import pytest

        @pytest.mark.asyncio
        async def test_leaky(sut):
            await sut.open({"servers": []})
        """
    )

    result = project.runpytest("--sut", "fake_sut:core", "test_leaky.py")

    result.assert_outcomes(passed=1)
    assert (project.path / "closed.log").read_text() == "run-1\n"


@pytest.mark.e2e
def test_a_driver_runs_the_shipped_suite_and_is_shut_down(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("--sut-cmd", FAKE_DRIVER_CMD, "-k", SMOKE)

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"mcp-conformance: --sut-cmd '{FAKE_DRIVER_CMD}': fake 0.0.1, claims core"])


DRIVER_PIDS = """
import os
from pathlib import Path

import pytest


@pytest.mark.parametrize("n", range(4))
def test_record_driver(sut, n):
    Path(f"pids-{os.getpid()}-{n}.txt").write_text(str(sut.adapter.start()["name"]) + " " + str(sut.adapter.pid))
"""


@pytest.mark.e2e
def test_under_xdist_each_worker_has_its_own_driver_and_none_is_left(project: pytest.Pytester) -> None:
    project.makepyfile(test_pids=DRIVER_PIDS)

    result = project.runpytest_subprocess("--sut-cmd", FAKE_DRIVER_CMD, "-n", "2", "-p", "xdist", "test_pids.py")

    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["mcp-conformance: --sut-cmd *: fake 0.0.1, claims core"])
    records = {path.name.split("-")[1]: path.read_text().split()[1] for path in project.path.glob("pids-*.txt")}
    driver_pids = {int(pid) for pid in records.values()}
    assert len(records) == 2 and len(driver_pids) == 2
    assert not any(is_running(pid) for pid in driver_pids)


ECHOED_SURROGATE = """
from conformance import Nonconformance, clause


@clause("GATE-4.5")
def test_a_finding_quoting_a_surrogate_raw(sut):
    raise Nonconformance(["GATE-4.5"], "the driver echoed " + chr(0xD800))


@clause("GATE-4.5")
def test_a_later_test(sut):
    pass
"""


@pytest.mark.e2e
def test_a_finding_that_quotes_a_lone_surrogate_does_not_stop_a_run_spread_over_workers(
    project: pytest.Pytester,
) -> None:
    """pytest-xdist cannot send a report holding a raw lone surrogate: the worker would crash
    and the session stop, leaving every later test unrun."""
    project.makepyfile(test_echo=ECHOED_SURROGATE)

    result = project.runpytest_subprocess("--sut", "fake_sut:core", "-n", "1", "-p", "xdist", "test_echo.py")

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
    result.stdout.fnmatch_lines(["*the driver echoed \\ud800*"])


MISBEHAVING = """
import pytest

pytestmark = pytest.mark.asyncio
PARAMS = {"servers": [], "baseTools": [], "systemPrompt": ""}


async def test_1_crashing(sut):
    await sut.open({**PARAMS, "userMessage": "crash"})


async def test_2_fine_afterwards(sut):
    async with sut.open({**PARAMS, "userMessage": "hello"}) as run:
        assert await run.definitions() == []
"""


@pytest.mark.e2e
def test_a_crashing_driver_fails_one_test_and_the_next_runs_on_a_fresh_one(project: pytest.Pytester) -> None:
    project.makepyfile(test_misbehaving=MISBEHAVING)

    result = project.runpytest("--sut-cmd", FAKE_DRIVER_CMD, "test_misbehaving.py")

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "E * conformance._errors.SutMisbehaved: run.open: driver exited with code 3 without answering",
            '*case: {"open": {"baseTools": *, "userMessage": "crash"}, "steps": *}',
            "*stderr (last lines):",
            "*boom: run.open crashed",
        ]
    )


@pytest.mark.e2e
def test_the_shipped_suite_imports_without_the_mcp_sdk() -> None:
    """Every certification imports the whole suite in its pytest process: the SDK would cost
    it seconds of start-up, and only the servers and the drivers need it."""
    code = (
        "import pathlib, sys, importlib, conformance.suite as s, conformance.plugin; "
        "[importlib.import_module('conformance.suite.' + p.stem) for p in pathlib.Path(s.__file__).parent.glob('*.py')]; "
        "print(sorted(n for n in ('mcp', 'mcp_types', 'uvicorn') if n in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.e2e
def test_the_plugin_module_imports_nothing_heavy() -> None:
    code = (
        "import sys, conformance.plugin; "
        "print(sorted(m for m in sys.modules if m.startswith(('conformance', 'anyio', 'hypothesis', 'mcp'))))"
    )

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout

    assert out.strip() == str(
        [
            "conformance",
            "conformance._errors",
            "conformance._keys",
            "conformance._options",
            "conformance._settings",
            "conformance.plugin",
        ]
    )


def test_the_shipped_suite_is_inside_the_package() -> None:
    import conformance.plugin

    assert conformance.plugin.SUITE_DIR.parent == Path(conformance.plugin.__file__).parent
    assert (conformance.plugin.SUITE_DIR / "__init__.py").is_file()
