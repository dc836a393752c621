"""Checks a trial of run.sh with Harbor's own models: `python3 check.py on|off TRIAL_DIR` (in the runner).

The result loads as Harbor's TrialResult with reward 1.0 and toolhost's totals (fake-model.mjs's fixed
usage), the trajectory as Harbor's Trajectory; with the sandbox on, the bash call ran with no
capabilities. Prints one line per trial; exits 1 on the first thing that is not so.
"""

import json
import sys
from pathlib import Path

from harbor.models.trajectories import Trajectory
from harbor.models.trial.result import TrialResult


def seconds(phase) -> float:
    return (phase.finished_at - phase.started_at).total_seconds()


def main(sandbox: str, trial: Path) -> None:
    result = TrialResult.model_validate_json((trial / "result.json").read_text())
    assert result.exception_info is None, result.exception_info
    assert result.verifier_result.rewards == {"reward": 1.0}, result.verifier_result.rewards
    agent = result.agent_result
    assert (agent.n_input_tokens, agent.n_cache_tokens, agent.n_output_tokens) == (3600, 900, 60), agent
    toolhost = agent.metadata["toolhost"]
    assert toolhost["exit_code"] == 0 and toolhost["requests"] == 3 and toolhost["tool_calls"] == 2, toolhost
    assert result.agent_info.name == "toolhost" and result.agent_info.version, result.agent_info
    trajectory = Trajectory.model_validate(json.loads((trial / "agent" / "trajectory.json").read_text()))
    outputs = [r.content for s in trajectory.steps if s.observation for r in s.observation.results]
    bash = next(o for o in outputs if "CapEff" in str(o))
    assert "Hello, world!" in bash, bash
    assert ("CapEff:\t0000000000000000" in bash) == (sandbox == "on"), bash
    wall = (result.finished_at - result.started_at).total_seconds()
    print(
        f"sandbox={sandbox}: reward 1.0, wall {wall:.1f} s (env {seconds(result.environment_setup):.1f}, "
        f"agent setup {seconds(result.agent_setup):.1f}, agent {seconds(result.agent_execution):.1f}, "
        f"verifier {seconds(result.verifier):.1f}); toolhost {result.agent_info.version}; tokens in "
        f"{agent.n_input_tokens} (cache {agent.n_cache_tokens}) out {agent.n_output_tokens}, cost {agent.cost_usd}; "
        f"trajectory {trajectory.schema_version}, {len(trajectory.steps)} steps; "
        f"bash {' '.join(l for l in bash.splitlines() if l.startswith(('CapEff', 'NoNewPrivs')))}"
    )


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
