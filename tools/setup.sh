#!/usr/bin/env bash
# Installs the Debian packages kvconform builds and tests with; idempotent, quiet when all are present.
# Usage: tools/setup.sh [clang]   (clang: also Debian's clang, for tools/clang-build.sh and
# tools/fuzz-check.sh; CI does not need it)
set -euo pipefail
PKGS=(cmake g++ make pkg-config nlohmann-json3-dev libssl-dev libgtest-dev libgmock-dev
      librapidcheck-dev libz3-dev libcli11-dev libopenblas-dev libsimdjson-dev
      libucx-dev ucx-utils libmimalloc-dev python3 python3-jsonschema procps)
if [ "${1:-}" = clang ]; then PKGS+=(clang); fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
