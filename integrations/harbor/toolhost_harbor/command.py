"""What the Harbor agent runs in the task container: toolhost's flags, the environment and the shell lines.

Plain Python with no Harbor import, so toolhost's own tests (test/integrations/harbor.test.ts) run
these exact lines against the built CLI; agent.py hands them to Harbor.
"""

from __future__ import annotations

import json
import math
import shlex
import sys
from dataclasses import dataclass
from typing import Any, Mapping

MODES = ("read-only", "ask", "accept-edits", "full")
SANDBOX_CHOICES = ("on", "off")

# Where toolhost's files go inside the container: under the agent's logs folder, which Harbor
# copies back to the trial folder, so the session file is there for the trajectory.
EVENTS_FILE = "toolhost.jsonl"
STDERR_FILE = "toolhost.stderr"
HOME_DIR = "toolhost-home"

# The environment toolhost reads for a model: keys and URLs, passed on from `--ae` or the host.
PASSTHROUGH_ENV = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "TOOLHOST_BASE_URL",
    "TOOLHOST_API_KEY",
    "OLLAMA_HOST",
    "TOOLHOST_CONTEXT_WINDOW",
)

# Node from nvm (what install() puts there when the image has no Node 20.19+) is on PATH only once
# nvm.sh is sourced; an image with its own Node has no nvm.sh, and this does nothing.
LOAD_NVM = '[ -s "$HOME/.nvm/nvm.sh" ] && . "$HOME/.nvm/nvm.sh";'

# toolhost needs Node >= 20.19 (package.json "engines").
NODE_OK = (
    "node -e 'const [a, b] = process.versions.node.split(\".\").map(Number); "
    "process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' 2>/dev/null"
)


@dataclass(frozen=True)
class Flag:
    """One `toolhost run` flag set by an agent kwarg (`--ak max_turns=30`)."""

    kwarg: str
    cli: str
    kind: str  # "enum", "int" (a whole number above 0) or "usd" (a number above 0)
    choices: tuple[str, ...] = ()
    default: str | None = None


FLAGS = (
    # `run` asks nothing: in its default mode (ask) every edit and command would be refused.
    Flag("mode", "--mode", "enum", MODES, "full"),
    Flag("max_turns", "--max-turns", "int"),
    Flag("max_tool_calls", "--max-tool-calls", "int"),
    Flag("max_tokens", "--max-tokens", "int"),
    Flag("max_cost_usd", "--max-cost-usd", "usd"),
)


def check_flag(flag: Flag, value: Any) -> str:
    """The flag's value as toolhost takes it, or a ValueError that names the kwarg and what it takes."""
    text = str(value).strip()
    if flag.kind == "enum":
        if text.lower() not in flag.choices:
            raise ValueError(f"{flag.kwarg}={value!r}: takes one of {', '.join(flag.choices)}")
        return text.lower()
    try:
        number = float(text) if flag.kind == "usd" else int(text)
    except ValueError:
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number) or number <= 0:
        what = "a number of dollars above 0" if flag.kind == "usd" else "a whole number above 0"
        raise ValueError(f"{flag.kwarg}={value!r}: takes {what}")
    return text


def check_flags(values: Mapping[str, Any]) -> dict[str, str]:
    """The kwargs given (None: not set), checked, each flag's default filled in."""
    checked: dict[str, str] = {}
    for flag in FLAGS:
        value = values.get(flag.kwarg, flag.default)
        if value is not None:
            checked[flag.kwarg] = check_flag(flag, value)
    return checked


def render_flags(values: Mapping[str, str]) -> str:
    """`--mode full --max-turns 30`: the same string as Harbor's build_cli_flags() for these values."""
    return " ".join(f"{flag.cli} {values[flag.kwarg]}" for flag in FLAGS if flag.kwarg in values)


def check_sandbox(value: Any) -> str:
    text = str(value).strip().lower()
    if text not in SANDBOX_CHOICES:
        raise ValueError(f"sandbox={value!r}: takes on or off")
    return text


def run_env(
    model: str | None, logs_dir: str, get_env: Any, sandbox: str | None = None
) -> dict[str, str]:
    """The run's environment: its home in the logs folder, the model from `-m`, the keys toolhost reads."""
    env = {"TOOLHOST_HOME": f"{logs_dir}/{HOME_DIR}"}
    if model:
        env["TOOLHOST_MODEL"] = model
    if sandbox:
        env["TOOLHOST_SANDBOX"] = sandbox
    for name in PASSTHROUGH_ENV:
        value = get_env(name)
        if value:
            env[name] = value
    return env


def run_command(instruction: str, flags: str, logs_dir: str) -> str:
    """The shell line of one headless run. The prompt goes in on stdin (`-`), so no instruction can read as a flag.

    Harbor prefixes `set -o pipefail`, so toolhost's exit code (docs/run-events.md) is the line's.
    """
    logs = shlex.quote(logs_dir)
    home = shlex.quote(f"{logs_dir}/{HOME_DIR}")
    return (
        f"{LOAD_NVM} mkdir -p {home} && "
        f"printf '%s' {shlex.quote(instruction)} | "
        f"toolhost run --json {flags} - 2>{logs}/{STDERR_FILE} | tee {logs}/{EVENTS_FILE}"
    )


def version_command() -> str:
    return f"{LOAD_NVM} toolhost --version"


def install_command(package: str, install_node: str) -> str:
    """Node 20.19+ (`install_node`, Harbor's nvm snippet, when the image has none), then the package."""
    return (
        f"set -euo pipefail; {LOAD_NVM} "
        f"if ! {NODE_OK}; then {install_node}; fi && "
        f"npm install -g --no-audit --no-fund {shlex.quote(package)} && toolhost --version"
    )


def lines_for(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The lines for one {instruction, logs_dir, model, env, kwargs, package}, or {"error": …} for bad kwargs."""
    kwargs = spec.get("kwargs", {})
    try:
        flags = render_flags(check_flags(kwargs))
        sandbox = check_sandbox(kwargs["sandbox"]) if kwargs.get("sandbox") is not None else None
    except ValueError as err:
        return {"error": str(err)}
    return {
        "run": run_command(spec["instruction"], flags, spec["logs_dir"]),
        "env": run_env(spec.get("model"), spec["logs_dir"], spec.get("env", {}).get, sandbox),
        "version": version_command(),
        "install": install_command(spec.get("package", "toolhost"), "echo 'no Node 20.19+ here' >&2; exit 1"),
    }


def main(argv: list[str]) -> int:
    """`python3 -m toolhost_harbor.command '[<spec>, …]'`: the lines of each spec, as a JSON list (for toolhost's tests)."""
    print(json.dumps([lines_for(spec) for spec in json.loads(argv[0])]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
