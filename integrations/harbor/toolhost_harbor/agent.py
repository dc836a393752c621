"""toolhost as a Harbor installed agent: `harbor run --agent toolhost_harbor.agent:Toolhost -m provider/model`.

Written against Harbor 0.22.0 (src/harbor/agents/installed/base.py, the pi and opencode agents);
see ../README.md. The shell lines and the trajectory come from command.py and atif.py, which toolhost's
own tests run without Harbor.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from harbor.agents.installed.base import (
    BaseInstalledAgent,
    CliFlag,
    EnvVar,
    PackageSpec,
    with_prompt_template,
)
from harbor.agents.installed.node_install import nvm_node_install_snippet
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext
from harbor.models.trajectories import Trajectory

from . import atif
from .command import (
    EVENTS_FILE,
    FLAGS,
    HOME_DIR,
    SANDBOX_CHOICES,
    check_flags,
    check_sandbox,
    install_command,
    run_command,
    run_env,
    version_command,
)

_HARBOR_TYPE = {"enum": "enum", "int": "int", "usd": "str"}
# Where the package lands in the container when `package` names a tarball on the host.
_UPLOADED_TARBALL = "/tmp/toolhost-harbor.tgz"


class Toolhost(BaseInstalledAgent):
    """Runs `toolhost run --json` in the task container; the trajectory comes from its session file."""

    SUPPORTS_ATIF = True
    CLI_FLAGS = [
        CliFlag(f.kwarg, cli=f.cli, type=_HARBOR_TYPE[f.kind], choices=list(f.choices) or None, default=f.default)
        for f in FLAGS
    ]
    ENV_VARS = [EnvVar("sandbox", env="TOOLHOST_SANDBOX", type="enum", choices=list(SANDBOX_CHOICES))]
    # toolhost's sandbox runs commands in bubblewrap.
    SYSTEM_PACKAGES = {
        **BaseInstalledAgent.SYSTEM_PACKAGES,
        "bubblewrap": PackageSpec(
            commands=("bwrap",),
            packages={"apt-get": ("bubblewrap",), "dnf": ("bubblewrap",), "yum": ("bubblewrap",), "apk": ("bubblewrap",)},
        ),
    }

    def __init__(self, *args: Any, package: str | None = None, **kwargs: Any):
        # Checked before Harbor takes the kwargs: a bad budget fails here, with its name, not in the container.
        check_flags({f.kwarg: kwargs[f.kwarg] for f in FLAGS if kwargs.get(f.kwarg) is not None})
        if kwargs.get("sandbox") is not None:
            check_sandbox(kwargs["sandbox"])
        super().__init__(*args, **kwargs)
        self._package = package  # an npm spec, a tarball URL, or a tarball on the host

    @staticmethod
    def name() -> str:
        return "toolhost"

    def get_version_command(self) -> str | None:
        return version_command()

    def parse_version(self, stdout: str) -> str:
        return stdout.strip().splitlines()[-1].strip()

    @property
    def _logs(self) -> str:
        # Harbor 0.22 names the container's side of logs_dir; /logs/agent before it.
        return str(getattr(self, "environment_logs_dir", None) or "/logs/agent")

    async def install(self, environment: BaseEnvironment) -> None:
        present = await environment.exec(command=version_command())
        if present.return_code != 0 or self._package:
            await self.ensure_system_dependencies(environment, ("curl", "ca_certificates"))
            package = self._package or (f"toolhost@{self._version}" if self._version else "toolhost")
            if Path(package).is_file():
                await environment.upload_file(Path(package), _UPLOADED_TARBALL)
                await self.exec_as_root(environment, command=f"chmod a+r {shlex.quote(_UPLOADED_TARBALL)}")
                package = _UPLOADED_TARBALL
            await self.exec_as_agent(environment, command=install_command(package, nvm_node_install_snippet()))
        await self.ensure_system_dependencies(environment, ("git",))  # the workspace checkpoints
        if self.resolve_env_vars().get("TOOLHOST_SANDBOX") != "off":
            await self.ensure_system_dependencies(environment, ("bubblewrap",))

    @with_prompt_template
    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        self._instruction = instruction
        env = run_env(self.model_name, self._logs, self._get_env, self.resolve_env_vars().get("TOOLHOST_SANDBOX"))
        await self.exec_as_agent(environment, command=run_command(instruction, self.build_cli_flags(), self._logs), env=env)

    def populate_context_post_run(self, context: AgentContext) -> None:
        events_file = self.logs_dir / EVENTS_FILE
        if not events_file.exists():
            return
        events = atif.read_jsonl(events_file)
        values = atif.context_values(events)
        for field, value in values.items():
            setattr(context, field, value)
        start_id = next((e.get("session_id") for e in events if e.get("type") == "start"), None)
        session_file = atif.find_session(self.logs_dir / HOME_DIR, str(start_id or ""))
        session = atif.read_jsonl(session_file) if session_file else None
        try:
            data = atif.convert(events, session, getattr(self, "_instruction", None), self.model_name, self.version())
            if data is None:
                return
            trajectory = Trajectory.model_validate(data)
            (self.logs_dir / "trajectory.json").write_text(json.dumps(trajectory.to_json_dict(), indent=2))
        except Exception:  # the trial's result stands without a trajectory
            self.logger.exception("toolhost: could not write the ATIF trajectory")
