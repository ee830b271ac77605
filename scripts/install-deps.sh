#!/usr/bin/env bash
# Installs the Debian packages troupe builds and tests with, only when one is missing.
# `install-deps.sh fuzz` installs what the libFuzzer targets need instead (clang, its runtime).
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libcaf-dev libcurl4-openssl-dev nlohmann-json3-dev libspdlog-dev
  doctest-dev libcli11-dev libbenchmark-dev libedit-dev python3 tmux bubblewrap jq time curl
)
# The Agent SDK tests run on node; a machine with its own node keeps it.
command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)
if [[ "${1:-}" == "fuzz" ]]; then
  packages=(clang-14 libclang-rt-14-dev)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "installing missing packages: ${missing[*]}" >&2
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
