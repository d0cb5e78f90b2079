#!/usr/bin/env bash
# On a GPU machine with Python, torch and triton but no network (the lent H100/H200: Python
# 3.12, torch 2.11, triton 3.6), from the checkout's root, after scripts/gpu_prepare.sh made .gpu/
# here and .gpu/ travelled with the checkout:
#   bash scripts/gpu_check.sh [PHASES]     PHASES: comma-separated, default tests,train,kernels
# Installs the carried wheels into /tmp (nothing system-wide), then runs each phase under its own
# time limit, so one that hangs costs only its share:
#   tests    every test that needs CUDA (tests/test_kernels.py: the Triton kernels compiled for the
#            device in fp32 and bf16, FlexAttention's document mask vs masked SDPA, the 124M
#            model's loss and gradients with both, the training losses of both kernel paths)
#   train    benchmarks/bench_gpu_train.py: `train run` at 124M, bf16 compile + fused kernels,
#            bf16 compile + torch kernels, bf16 eager, fp32 eager (the loss-curve reference)
#   kernels  benchmarks/bench_kernels.py: each Triton kernel vs eager torch and torch.compile
# Results go to $OUT (the device tool's folder that comes back; default .gpu/out): env.txt,
# tests.txt, train.md, train.json, kernels.md, kernels.json; a summary ends the output.
# Limits (seconds), selections and step counts can be changed: TESTS_S, TRAIN_S, KERNELS_S,
# TESTS_K (pytest -k), TESTS_N (test processes), KERNELS_ONLY (bench_kernels --only), STEPS,
# EAGER_STEPS, FP32_STEPS, PROFILE_STEPS, TRAIN_VARIANTS, TRAIN_SET (extra --set for every run).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/.gpu/out}
PHASES=${1:-tests,train,kernels}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
start=$(date +%s)

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/c4forge-site "$ROOT"/.gpu/wheels/*.whl || { echo "install failed"; exit 1; }
export PYTHONPATH=/tmp/c4forge-site
# Run from a copy of the tests and benchmarks: in the checkout's root, its c4forge/ folder (the
# command lines alone, the stages being mapped in by the install) would shadow the installed package.
RUN=/tmp/c4forge-run
rm -rf "$RUN" && mkdir -p "$RUN" && cp -r "$ROOT"/tests "$ROOT"/benchmarks "$ROOT"/pyproject.toml "$RUN"/
cd "$RUN" || exit 1

{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv
  python3 -c "import sys, torch, triton, numpy; print('python', sys.version.split()[0], '| torch', torch.__version__,
'| CUDA', torch.version.cuda, '| triton', triton.__version__, '| numpy', numpy.__version__, '|', torch.cuda.get_device_name())"
  nproc
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

phase() { [[ ",$PHASES," == *",$1,"* ]]; }

if phase tests; then
  timeout -k 10 "${TESTS_S:-150}" python3 -m pytest -q -rA -p no:cacheprovider -n "${TESTS_N:-4}" \
    ${TESTS_K:+-k "$TESTS_K"} tests/test_kernels.py > "$OUT/tests.txt" 2>&1
  echo "tests: exit $? ($(( $(date +%s) - start )) s so far)"
fi
if phase train; then
  timeout -k 20 "${TRAIN_S:-260}" python3 benchmarks/bench_gpu_train.py --tokens "$ROOT/.gpu/tokens" \
    --out /tmp/gpu-train --json "$OUT/train.json" --steps "${STEPS:-200}" \
    --eager-steps "${EAGER_STEPS:-80}" --fp32-steps "${FP32_STEPS:-60}" --profile-steps "${PROFILE_STEPS:-5}" \
    --variants "${TRAIN_VARIANTS:-bf16 compile fused,bf16 compile torch,bf16 eager fused,fp32 eager torch}" \
    ${TRAIN_SET:+$(for s in $TRAIN_SET; do printf -- '--set %s ' "$s"; done)} > "$OUT/train.md" 2>&1
  echo "train: exit $? ($(( $(date +%s) - start )) s so far)"
fi
if phase kernels; then
  timeout -k 10 "${KERNELS_S:-150}" python3 benchmarks/bench_kernels.py --json "$OUT/kernels.json" \
    ${KERNELS_ONLY:+--only "$KERNELS_ONLY"} > "$OUT/kernels.md" 2>&1
  echo "kernels: exit $? ($(( $(date +%s) - start )) s so far)"
fi

# The machine's paths out of what comes back (files here print paths relative to the repository):
# the checkout, the copy the tests ran from, the install, the image's python, pytest's temp folders.
site=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
sed -i -e "s#$ROOT/##g" -e "s#$RUN/##g" -e "s#/tmp/c4forge-site/#site-packages/#g" -e "s#$site/#site-packages/#g" \
  -e "s#$(dirname "$(command -v python3)")/##g" -e "s#/tmp/pytest-of-[a-z]*/#\$TMPDIR/#g" "$OUT"/*.txt "$OUT"/*.md "$OUT"/*.json 2>/dev/null

echo "== summary"
[ -f "$OUT/tests.txt" ] && grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests.txt" | tail -15
[ -f "$OUT/train.md" ] && grep -vE "^(W|I)[0-9]{4}|USDT|DeviceProperties" "$OUT/train.md" | tail -25
[ -f "$OUT/kernels.md" ] && grep -E "^\||failed" "$OUT/kernels.md"
echo "total $(( $(date +%s) - start )) s"
