#!/usr/bin/env bash
# One Harbor trial of toolhost, end to end, twice (sandbox on, then off), on a machine with podman
# and Harbor's source (no Docker daemon and no PyPI install of Harbor needed). Not part of npm test.
#
#   integrations/harbor/e2e/run.sh HARBOR_SRC
#
# HARBOR_SRC: a Harbor checkout (its root, with pyproject.toml and src/harbor) or its src folder.
# Environment: TOOLHOST_IMAGE (default localhost/toolhost:<version>, from `npm run image`),
# RUNNER_BASE (the runner's Debian trixie base, default debian:trixie-slim), PORT (the fake model's,
# default 18788), WORK (scratch folder, default a new one under /tmp), CONTAINERS_CONF (podman's
# settings on hosts that need them). See ../README.md, "Checked end to end".
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
AGENT=$(dirname "$HERE")
ROOT=$(cd "$AGENT/../.." && pwd)
SRC=${1:?usage: run.sh HARBOR_SRC (a Harbor checkout or its src folder)}
SRC=$(cd "$SRC" && pwd)
[ -d "$SRC/src/harbor" ] && SRC=$SRC/src
[ -f "$SRC/harbor/__init__.py" ] || { echo "run.sh: no harbor package in $SRC" >&2; exit 2; }
VERSION=$(node -p 'require(process.argv[1]).version' "$ROOT/package.json")
TOOLHOST_IMAGE=${TOOLHOST_IMAGE:-localhost/toolhost:$VERSION}
RUNNER=localhost/harbor-e2e-runner
PORT=${PORT:-18788}
WORK=${WORK:-$(mktemp -d /tmp/toolhost-harbor-e2e.XXXXXX)}
mkdir -p "$WORK"
echo "run.sh: scratch in $WORK"

podman image exists "$TOOLHOST_IMAGE" || { echo "run.sh: no image $TOOLHOST_IMAGE (npm run image builds it)" >&2; exit 2; }

# Harbor's CLI reads its own version from its metadata: a checkout has none until installed.
PYLIB=$WORK/pylib
if ! ls -d "$SRC"/harbor-*.dist-info >/dev/null 2>&1; then
  HARBOR_VERSION=$(sed -n 's/^version *= *"\(.*\)"/\1/p' "$SRC/../pyproject.toml" 2>/dev/null | head -1)
  mkdir -p "$PYLIB/harbor-${HARBOR_VERSION:-0}.dist-info"
  printf 'Metadata-Version: 2.1\nName: harbor\nVersion: %s\n' "${HARBOR_VERSION:-0}" >"$PYLIB/harbor-${HARBOR_VERSION:-0}.dist-info/METADATA"
fi
mkdir -p "$PYLIB"

if ! podman image exists "$RUNNER"; then
  mkdir -p "$WORK/runner/wheels"
  # Not packaged by Debian; Harbor's CLI imports them at start. Pure Python.
  python3 -m pip download --quiet --no-deps -d "$WORK/runner/wheels" \
    supabase postgrest realtime storage3 strenum supabase-auth supabase-functions
  podman build --network host --build-arg "BASE=${RUNNER_BASE:-debian:trixie-slim}" \
    -t "$RUNNER" -f "$HERE/runner.Containerfile" "$WORK/runner"
fi

PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

# Harbor drives containers through the Docker API: podman's, on a socket of our own.
podman system service --time=0 "unix://$WORK/podman.sock" &
PIDS+=($!)
node "$HERE/fake-model.mjs" "$PORT" >"$WORK/fake-model.url" &
PIDS+=($!)
for _ in $(seq 100); do [ -S "$WORK/podman.sock" ] && [ -s "$WORK/fake-model.url" ] && break; sleep 0.1; done
URL=$(cat "$WORK/fake-model.url")

cp -r "$HERE/hello-toolhost" "$HERE/compose-overlay.yaml" "$WORK/"
runner() {
  # The scratch folder at the same path inside: compose hands host paths to the engine.
  podman run --rm --network host -e COLUMNS=160 -v "$WORK:$WORK" -w "$WORK" \
    -v "$SRC:/opt/harbor/src:ro" -v "$AGENT:/opt/agent:ro" -v "$HERE/check.py:/opt/check.py:ro" \
    -v "$WORK/podman.sock:/run/docker.sock" -e DOCKER_HOST=unix:///run/docker.sock -e DOCKER_BUILDKIT=0 \
    -e TOOLHOST_IMAGE="$TOOLHOST_IMAGE" -e PYTHONPATH="/opt/pylib:$PYLIB:/opt/harbor/src:/opt/agent" \
    "$RUNNER" "$@"
}

for sandbox in on off; do
  runner python3 -m harbor.cli.main run -p hello-toolhost --agent toolhost_harbor.agent:Toolhost \
    -m openai-compatible/fake --ae "TOOLHOST_BASE_URL=$URL" --ak "sandbox=$sandbox" \
    --extra-docker-compose "$WORK/compose-overlay.yaml" -n 1 -y -o jobs --job-name "sandbox-$sandbox"
  runner python3 /opt/check.py "$sandbox" "$(ls -d "$WORK/jobs/sandbox-$sandbox"/hello-toolhost__*)"
done
