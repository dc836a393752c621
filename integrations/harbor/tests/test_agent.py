"""The agent in Harbor's own classes: its flags and environment through Harbor's descriptors, then a whole
run through Harbor's exec path (a stand-in environment runs the commands with bash on this machine),
the context filled and the trajectory checked by Harbor's Trajectory model.

Runs where Harbor (>= 0.22) is importable: `cd integrations/harbor && python3 -m pytest tests`. The run
needs the built CLI (`npm run build` at the root) and node.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

pytest.importorskip(
    "harbor.agents.installed.base",
    reason="Harbor is not importable here (pip install harbor, Python >= 3.12); toolhost's side is tested by test/integrations/harbor.test.ts",
)

from harbor.models.agent.context import AgentContext  # noqa: E402
from harbor.models.trajectories import Trajectory  # noqa: E402

from toolhost_harbor.agent import Toolhost  # noqa: E402
from toolhost_harbor.command import check_flags, render_flags  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
CLI = ROOT / "dist" / "cli.js"


def make(tmp_path: Path, **kwargs) -> Toolhost:
    logs = tmp_path / "logs"
    logs.mkdir(exist_ok=True)
    return Toolhost(logs_dir=logs, environment_logs_dir=PurePosixPath(logs), model_name="openai-compatible/fake", **kwargs)


def test_flags_and_environment_go_through_harbors_descriptors(tmp_path: Path) -> None:
    agent = make(tmp_path, max_turns=30, max_cost_usd=0.5, sandbox="off")
    assert agent.name() == "toolhost"
    assert agent.build_cli_flags() == "--mode full --max-turns 30 --max-cost-usd 0.5"
    assert agent.build_cli_flags() == render_flags(check_flags({"max_turns": 30, "max_cost_usd": 0.5}))
    assert agent.resolve_env_vars() == {"TOOLHOST_SANDBOX": "off"}
    assert make(tmp_path, mode="ask").build_cli_flags() == "--mode ask"


@pytest.mark.parametrize(
    ("kwarg", "value"),
    [("max_turns", "many"), ("max_turns", 0), ("max_cost_usd", "-1"), ("mode", "yolo"), ("sandbox", "maybe")],
)
def test_a_bad_kwarg_fails_with_its_name(tmp_path: Path, kwarg: str, value: object) -> None:
    with pytest.raises(ValueError, match=kwarg):
        make(tmp_path, **{kwarg: value})


class LocalEnvironment:
    """What BaseInstalledAgent uses of an environment (exec), run with bash in a workspace on this machine."""

    def __init__(self, workspace: Path, path: str):
        self.workspace, self.path, self.commands = workspace, path, []

    async def exec(self, command, user=None, env=None, cwd=None, timeout_sec=None):
        self.commands.append(command)
        run_env = {"PATH": self.path, "HOME": str(self.workspace.parent)} | (env or {})
        done = subprocess.run(["bash", "-c", command], cwd=cwd or self.workspace, env=run_env, capture_output=True, text=True)
        return SimpleNamespace(return_code=done.returncode, stdout=done.stdout, stderr=done.stderr)


@pytest.mark.skipif(not CLI.exists() or shutil.which("node") is None, reason="needs node and the built CLI (npm run build)")
def test_a_run_through_harbors_exec_fills_the_context_and_writes_a_valid_trajectory(tmp_path: Path) -> None:
    fake = subprocess.Popen(["node", str(ROOT / "test/fixtures/fake-openai.mjs")], stdout=subprocess.PIPE, text=True)
    try:
        url = re.search(r"on (http://\S+)", fake.stdout.readline()).group(1)
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        (bin_dir / "toolhost").write_text(f'#!/bin/sh\nexec node {CLI} "$@"\n')
        (bin_dir / "toolhost").chmod(0o755)
        workspace = tmp_path / "app"
        workspace.mkdir()
        (workspace / "notes.txt").write_text("TODO: water the plants\n")
        environment = LocalEnvironment(workspace, f"{bin_dir}:{os.environ['PATH']}")
        os.environ["TOOLHOST_BASE_URL"] = url  # read from the host's environment, as Harbor's agents do
        try:
            agent = make(tmp_path, sandbox="off", max_turns=5)
            asyncio.run(agent.setup(environment))
            context = AgentContext()
            asyncio.run(agent.run("Find the TODOs", environment, context))
            agent.populate_context_post_run(context)
        finally:
            del os.environ["TOOLHOST_BASE_URL"]
    finally:
        fake.terminate()
        fake.wait()

    version = json.loads((ROOT / "package.json").read_text())["version"]
    assert agent.version() == version  # from get_version_command, after install()
    assert environment.commands[-1].startswith("set -o pipefail;")  # Harbor's _exec ran the line
    assert context.n_input_tokens and context.n_output_tokens and context.n_cache_tokens == 0
    assert context.metadata["toolhost"]["exit_code"] == 0
    assert context.metadata["toolhost"]["tool_calls"] == 2
    trajectory = Trajectory.model_validate(json.loads((agent.logs_dir / "trajectory.json").read_text()))
    assert [s.source for s in trajectory.steps] == ["user", "agent", "agent", "agent"]
    assert trajectory.steps[1].tool_calls[0].function_name == "grep"
    assert trajectory.steps[2].tool_calls[0].arguments["path"] == "notes.txt"
    assert "water the plants" in trajectory.steps[2].observation.results[0].content
    assert trajectory.final_metrics.total_prompt_tokens == context.n_input_tokens
