#!/bin/bash
# After mixed_batches.sh: drop cand's row from verdicts.jsonl (grade.json untouched), and
# separately reverse the row order. Expect: drop refused, reorder harmless.
WT=/work/wt/rt-intake; export PYTHONPATH=$WT; T=${T:-/tmp/rti-merge}
rm -rf $T/s1drop $T/s1rev; cp -r $T/s1bad $T/s1drop; cp -r $T/s1bad $T/s1rev
grep -v '"patch": "cand"' $T/s1bad/verdicts.jsonl > $T/s1drop/verdicts.jsonl
tac $T/s1bad/verdicts.jsonl > $T/s1rev/verdicts.jsonl
for s in s1drop s1rev; do echo "== $s"; (cd $WT && python3 -m doit -f $WT/dodo.py merge cases=$T/lib out=$T/m-$s from=$T/$s,$T/s2bad report_only=1 2>&1 | grep -i "cand\|missing\|error" | head -3); done
