#!/usr/bin/env bash
# Runs the official ACP conformance kit (agentclientprotocol/acp-tck) against this checkout's
# dist/cli.js, v1 and then v2, with the fake model's demo standing in for a model (no key, no
# network). Not part of npm test: the kit is Python and lives outside this repository.
#
#   scripts/tck.sh /path/to/acp-tck [v1|v2|both] [-- extra kit options, e.g. -k RESUME --report-json out.json]
#
# The kit runs with `uv run` when uv is installed (it installs the kit's own dependencies), else
# with `python3 -m tck` and the kit's src/ on PYTHONPATH (pytest and pydantic must be installed).
# Exit status: 0 iff every version run was conformant (the kit's own exit code).
set -euo pipefail

kit=${1:?usage: scripts/tck.sh /path/to/acp-tck [v1|v2|both] [-- kit options]}
shift
versions=both
if [[ $# -gt 0 && $1 != -- ]]; then versions=$1; shift; fi
[[ ${1:-} == -- ]] && shift
case $versions in v1) versions=(1) ;; v2) versions=(2) ;; both) versions=(1 2) ;; *) echo "scripts/tck.sh: unknown version set '$versions' (v1, v2 or both)" >&2; exit 2 ;; esac

repo=$(cd "$(dirname "$0")/.." && pwd)
[[ -f $repo/dist/cli.js ]] || { echo "scripts/tck.sh: $repo/dist/cli.js is missing: run npm run build" >&2; exit 2; }
[[ -d $kit/src/tck ]] || { echo "scripts/tck.sh: $kit has no src/tck: is it an acp-tck checkout?" >&2; exit 2; }

# A home of its own (no saved login, config or sessions of the user's), and the demo model.
home=$(mktemp -d)
fake_log=$home/fake-model.log
node "$repo/test/fixtures/fake-openai.mjs" >"$fake_log" 2>&1 &
fake_pid=$!
trap 'kill "$fake_pid" 2>/dev/null || true; rm -rf "$home"' EXIT
for _ in $(seq 100); do grep -q '^Fake OpenAI-compatible server on ' "$fake_log" && break; sleep 0.1; done
url=$(sed -n 's/^Fake OpenAI-compatible server on \(.*\)$/\1/p' "$fake_log")
[[ -n $url ]] || { echo "scripts/tck.sh: the fake model did not start:" >&2; cat "$fake_log" >&2; exit 1; }

export TOOLHOST_HOME=$home TOOLHOST_MODEL=openai-compatible/fake TOOLHOST_BASE_URL=$url

run_kit() {
  if command -v uv >/dev/null; then
    (cd "$kit" && uv run acp-tck "$@")
  else
    (cd "$kit" && PYTHONPATH="$kit/src${PYTHONPATH:+:$PYTHONPATH}" python3 -m tck "$@")
  fi
}

status=0
for version in "${versions[@]}"; do
  echo "== acp-tck, protocol version $version =="
  run_kit --protocol-version "$version" "$@" -- node "$repo/dist/cli.js" || status=1
done
exit $status
