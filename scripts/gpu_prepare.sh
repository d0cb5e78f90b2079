#!/usr/bin/env bash
# Run here, on a machine with the project's venv (make venv) and the shared data: makes what
# scripts/gpu_check.sh needs on a GPU machine that has Python 3.12, torch and triton but no
# network, under .gpu/ (git-ignored; about 10 MB):
#   .gpu/wheels/  c4forge built from this checkout, plus the packages that machine's image lacks
#                 (jsonschema and its dependencies, pyahocorasick; the versions this venv has), for CPython 3.12
#   .gpu/tokens/  real tokens: ../shared/data's crawl through the c4 chain (corpus clean), a
#                 32,000-piece BPE tokenizer trained on that corpus, `tokenizer encode`
# Then, on the GPU machine, from the checkout's root: bash scripts/gpu_check.sh (see there).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
SHARED=${C4FORGE_SHARED_DATA:-../shared/data}
mkdir -p .gpu

rm -rf .gpu/wheels
mkdir .gpu/wheels
$BIN/python -m build --wheel --no-isolation --outdir .gpu/wheels . >/dev/null
missing=()
for dist in jsonschema jsonschema-specifications referencing rpds-py pyahocorasick; do
  missing+=("$dist==$($BIN/python -c "import importlib.metadata as m; print(m.version('$dist'))")")
done
$BIN/pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .gpu/wheels "${missing[@]}"

if [ ! -f .gpu/tokens/manifest.json ]; then
  $BIN/corpus clean -q "$SHARED"/crawl/*.wet.gz "$SHARED"/crawl-extra/web-benchmarks.warc.wet.gz \
    --badwords "$SHARED"/badwords -o .gpu/corpus --overwrite
  $BIN/tokenizer train -q -i .gpu/corpus -o .gpu/tokenizer --vocab-size 32000 --overwrite
  $BIN/tokenizer encode -i .gpu/corpus --tokenizer .gpu/tokenizer -o .gpu/tokens --overwrite
  rm -rf .gpu/corpus
fi
ls .gpu/wheels
du -sh .gpu/wheels .gpu/tokens
