"""``mcp-fleet config``: each client's configuration file, checked against an example of its format."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from mock_servers import generate_tools, load_spec, preset
from mock_servers._cli import main
from mock_servers._clients import INSPECTOR
from mock_servers._serve import endpoint_urls
from tests.mock_servers.mock_fleet_helpers import free_port_pair, list_all

ROOT = str(Path(__file__).resolve().parents[2])

EXAMPLES = Path(__file__).parent / "client_configs"
EXAMPLE_FILES = {"vscode": "vscode.json", "claude": "claude_desktop.json", "cursor": "cursor.json"}
EXAMPLE_FILES["inspector"] = "inspector.json"


def shape(value: Any) -> Any:
    """A value's JSON type, with the types of list items and object values."""
    if isinstance(value, dict):
        return ("object", frozenset(shape(v) for v in value.values()))
    if isinstance(value, list):
        return ("array", frozenset(shape(v) for v in value))
    return type(value).__name__


def assert_like_example(client: str, config: dict[str, Any]) -> None:
    example = json.loads((EXAMPLES / EXAMPLE_FILES[client]).read_text(encoding="utf-8"))
    assert list(config) == list(example)
    examples = list(next(iter(example.values())).values())
    for name, entry in next(iter(config.values())).items():
        transport = "stdio" if "command" in entry else "http"
        like = [e for e in examples if ("command" in e) == (transport == "stdio")]
        assert like, f"{client}: the example has no {transport} entry"
        assert set(entry) <= set(like[0]), f"{client} {name}: keys {sorted(set(entry) - set(like[0]))} unknown"
        assert {k: shape(v) for k, v in entry.items()} == {k: shape(like[0][k]) for k in entry}


def config(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["config", *args]) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


@pytest.mark.parametrize("client", ["vscode", "claude", "cursor", "inspector"])
def test_each_client_gets_one_entry_per_server_in_its_own_format(
    client: str, capsys: pytest.CaptureFixture[str]
) -> None:
    produced = config(capsys, "seed-example", "--for", client, "--port", "9100")
    assert_like_example(client, produced)
    entries = next(iter(produced.values()))
    assert list(entries) == ["github", "linear", "browser", "data"]
    if client != "claude":
        assert [e["url"] for e in entries.values()] == list(endpoint_urls(preset("seed-example"), 9100).values())


@pytest.mark.parametrize("client", ["vscode", "cursor", "inspector"])
def test_stdio_entries_are_offered_to_every_client_that_starts_processes(
    client: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_like_example(client, config(capsys, "seed-example", "--for", client, "--transport", "stdio"))


def test_http_urls_follow_the_processes_a_fleet_is_spread_over(capsys: pytest.CaptureFixture[str]) -> None:
    entries = config(capsys, "seed-example", "--for", "cursor", "--port", "9100", "--processes", "2")["mcpServers"]
    ports = [entry["url"].split("/")[2] for entry in entries.values()]
    assert ports == ["127.0.0.1:9100", "127.0.0.1:9100", "127.0.0.1:9101", "127.0.0.1:9101"]


@pytest.mark.e2e
def test_claude_desktop_gets_absolute_commands_that_start_the_servers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec_file = tmp_path / "fleet.toml"
    spec_file.write_text('[[servers]]\nid = "notes"\ndomain = "docs"\ntool_count = 7\npage_size = 3\n')
    entry = config(capsys, str(spec_file), "--for", "claude")["mcpServers"]["notes"]
    assert Path(entry["command"]).is_absolute()
    assert str(spec_file.resolve()) in entry["args"]
    assert entry["args"][-2:] == ["--server-id", "notes"]  # --server would be taken by mcp-inspector

    async def listed() -> list[str]:
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry["env"])
        async with Client(params) as client:
            return [t.name for t in await list_all(client)]

    assert anyio.run(listed) == [t["name"] for t in generate_tools(load_spec(spec_file).servers[0])]


def test_claude_desktop_cannot_be_given_urls(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "seed-example", "--for", "claude", "--transport", "http"]) == 2
    assert capsys.readouterr().err == "mcp-fleet config: claude's configuration file cannot start http servers\n"


def test_an_http_configuration_says_how_to_start_the_servers(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "seed-example", "--for", "vscode", "--port", "9100"]) == 0
    assert capsys.readouterr().err == "# start the servers with: mcp-fleet serve seed-example --port 9100\n"


def test_the_inspector_file_says_which_inspector_reads_it_and_pins_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "seed-example", "--for", "inspector", "--port", "9100"]) == 0
    notes = capsys.readouterr().err.splitlines()
    assert notes[0] == "# start the servers with: mcp-fleet serve seed-example --port 9100"
    assert notes[1].startswith("# for the MCP Inspector 2.0 or later: before 2.0 (0.x, such as a cached 0.15")
    assert notes[2].startswith(
        f"# save it as inspector.json, then: npx -y {INSPECTOR} --config inspector.json --server github"
    )
    assert INSPECTOR.startswith("@modelcontextprotocol/inspector@2.")
    assert main(["config", "--help"]) == 0
    assert "inspector is the MCP Inspector 2.0 or later" in " ".join(capsys.readouterr().out.split())


@pytest.mark.e2e
@pytest.mark.slow
def test_the_pinned_inspector_lists_every_tool_of_every_page_through_the_http_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The printed command, run as printed (with --cli): 2.x reads the HTTP entries; 0.15 did not."""
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx is not installed: the MCP Inspector runs with it")
    port = free_port_pair()
    config = tmp_path / "inspector.json"
    assert main(["config", "seed-example", "--for", "inspector", "--port", str(port)]) == 0
    config.write_text(capsys.readouterr().out)
    command = [sys.executable, "-m", "mock_servers", "serve", "seed-example", "--port", str(port)]
    env = {**os.environ, "PYTHONPATH": ROOT}
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env) as serve:
        try:
            assert serve.stdout is not None
            serve.stdout.readline()  # the endpoints: the servers are up
            inspector = [npx, "-y", INSPECTOR, "--cli", "--config", str(config), "--server", "github"]
            done = subprocess.run(
                [*inspector, "--method", "tools/list"],
                capture_output=True,
                text=True,
                timeout=300,
                env={**os.environ, "HOME": str(tmp_path)},  # it keeps its storage under ~/.mcp-inspector
            )
        finally:
            serve.terminate()
            serve.wait(60)
    assert done.returncode == 0, f"{shlex.join(inspector)}: {done.stderr[-2000:]}"
    listed = json.loads(done.stdout)
    assert [t["name"] for t in listed["tools"]] == [
        t["name"] for t in generate_tools(preset("seed-example").server("github"))
    ]
