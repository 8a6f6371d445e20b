#!/usr/bin/env bash
# The GPU checks, on a machine with a CUDA GPU: run once (under 8 minutes on one H200), then
# put the printed tables in docs/benchmarks.md. Writes everything under ${OUT:-/tmp/gpu-checks}.
#   1. mask_fill_fp16 smoke on CUDA: real fp16 autocast with a grad scaler (16-mixed), bf16, fp32.
#   2. attention_kernel smoke on CUDA (bf16): flash must run as flash, or be refused before the run.
#   3. the attention kernel bench: forward + backward, 256 .. 32k tokens, peak memory.
set -euo pipefail
OUT=${OUT:-/tmp/gpu-checks}
mkdir -p "$OUT"
export WANDB_MODE=offline ABLATE_DATA_DIR=${ABLATE_DATA_DIR:-/work/shared/data}
python -c "import torch; print(torch.__version__, torch.cuda.get_device_name(0))"
for name in mask_fill_fp16 attention_kernel; do
  start=$(date +%s)
  timeout 200 ablate run "$name" --profile smoke --results-dir "$OUT/results" --wandb off --workers 1 || true
  echo "$name smoke: $(( $(date +%s) - start )) s"
  ablate status "$name" --profile smoke --results-dir "$OUT/results" || true
  ablate report "$name" --profile smoke --results-dir "$OUT/results" --out "$OUT/reports" || true
done
python - "$OUT/results" <<'PY'
import json, pathlib, sys
for rec in sorted(pathlib.Path(sys.argv[1]).glob("*/smoke/*/record.json")):
    r = json.loads(rec.read_text())
    m = r.get("metrics") or {}
    print(r["ablation"], r["variant_label"], r["seed"], r["status"], r.get("precision"), r.get("kernel_backend"),
          {k: round(v, 4) if isinstance(v, float) else v for k, v in m.items() if k.startswith(("leak", "attn", "train_tokens", "peak"))}, (r.get("reason") or "")[:80])
PY
for dtype in bfloat16 float16; do  # writes $OUT/results/bench/attention-cuda-$dtype.json
  timeout 150 ablate bench attention --device cuda --dtype "$dtype" \
    --lengths 256,1024,4096,8192,16384,32768 --out "$OUT/results/bench" 2>&1 | grep -v Warning || true
done
ablate report attention_kernel --profile smoke --results-dir "$OUT/results" --out "$OUT/reports" || true  # + speed and memory
