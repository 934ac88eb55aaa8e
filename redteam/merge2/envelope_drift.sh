#!/bin/bash
# Merge attack, no file edited after grading: shard 1's host grades honestly, but its library
# copy's envelopes.yaml lacks -Werror (another library version). The manifest's `library`
# digest covers identity.lock and the case folders, not envelopes.yaml; the rows' toolchain
# pins differ from shard 2's and from the lock, but merge compares neither.
set -u
WT=${WT:-/work/wt/rt2-intake}; export PYTHONPATH=$WT
T=${T:-/tmp/rt2i-merge}; rm -rf $T; mkdir -p $T/lib $T/batch/hostile_intake
cp $WT/cases/envelopes.yaml $WT/cases/identity.lock $T/lib/; cp -r $WT/cases/hostile_intake $T/lib/
cp $WT/redteam/intake/control_unused.diff $T/batch/hostile_intake/cand.diff
cp -r $T/lib $T/lib2; sed -i 's/, -Werror\]/]/' $T/lib2/envelopes.yaml
g() { (cd $WT && timeout 900 python3 -m doit -f $WT/dodo.py grade cases=$1 out=$2 "${@:3}" patches=$T/batch report_only=1 >$2.log 2>&1); }
for i in 1 2; do g $T/lib $T/s$i shard=$i/2; g $T/lib2 $T/d$i shard=$i/2; done
for s in s d; do for i in 1 2; do echo "$s$i: $(grep -h cand $T/$s$i/verdicts.jsonl | cut -c1-200)"; done; done
echo "== honest merge"; (cd $WT && python3 -m doit -f $WT/dodo.py merge cases=$T/lib out=$T/m1 from=$T/s1,$T/s2 report_only=1 2>&1 | grep -i "cand\|error\|refus" | head -5)
echo "== drifted shards mixed in"
for combo in "d1,s2" "s1,d2"; do a=${combo%,*}; b=${combo#*,}; echo "-- $a+$b"; (cd $WT && python3 -m doit -f $WT/dodo.py merge cases=$T/lib out=$T/m-$a$b from=$T/$a,$T/$b report_only=1 2>&1 | grep -i "cand\|error\|refus\|differ" | head -5); done
