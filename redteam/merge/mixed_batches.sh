#!/bin/bash
# Merge attack: no file edited. Two genuine shard grades of DIFFERENT batches (same patch
# name, different bytes) are merged as if they were one batch. merge.read() checks each
# row against its own shard's grade.json, but never that the shards graded the same batch
# (patch sha per row), the same library (identity.digest) or the same grader.
set -u
WT=/work/wt/rt-intake; export PYTHONPATH=$WT
T=${T:-/tmp/rti-merge}; rm -rf $T; mkdir -p $T/lib $T/bad/hostile_intake $T/good/hostile_intake
cp $WT/cases/envelopes.yaml $T/lib/; cp -r $WT/cases/hostile_intake $T/lib/
# the batch under review: `cand` keeps an unused parameter (rejected by -Werror)
cp $WT/redteam/intake/control_unused.diff $T/bad/hostile_intake/cand.diff
# what the shard host graded instead, under the same name
cp $WT/cases/hostile_intake/patches/good_bounds.diff $T/good/hostile_intake/cand.diff
g() { (cd $WT && timeout 600 python3 -m doit -f $WT/dodo.py grade cases=$T/lib out=$1 "${@:2}" report_only=1 >$1.log 2>&1); }
g $T/s1bad shard=1/2 patches=$T/bad; g $T/s2bad shard=2/2 patches=$T/bad
g $T/s1good shard=1/2 patches=$T/good
echo "honest merge:"; (cd $WT && python3 -m doit -f $WT/dodo.py merge cases=$T/lib out=$T/m1 from=$T/s1bad,$T/s2bad report_only=1 2>&1 | grep cand)
echo "mixed merge (shard 1 from the other batch):"
(cd $WT && python3 -m doit -f $WT/dodo.py merge cases=$T/lib out=$T/m2 from=$T/s1good,$T/s2bad report_only=1 2>&1 | grep -i "cand\|error\|refus")
