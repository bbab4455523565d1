#!/usr/bin/env bash
# The main job: set up, build, then run `kvconform suite` (or `kvconform ARGS...` when given).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh >&2
if [ $# -eq 0 ]; then
  exec build/bin/kvconform suite
fi
exec build/bin/kvconform "$@"
