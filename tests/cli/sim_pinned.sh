#!/bin/sh
# crux-sim's results, pinned: a small random-placement run under every
# policy (100 jobs on an oversubscribed two-layer Clos: contention, replans,
# shortcuts and fast-forward all happen) must give these exact files.  A
# change meant only to make the simulator faster must keep them; a change
# meant to move results replaces the hashes below with the ones printed on
# failure ("# new:" lines) and says why in its commit.  x86-64 only: other
# targets may round differently (fused multiply-adds).
. "$(dirname "$0")/tap.sh"
SIM=${CRUX_SIM:-../sim/crux-sim}

if [ "$(uname -m)" != x86_64 ]; then
  echo "1..0 # SKIP results pinned for x86-64"
  exit 0
fi
cat >"$WORK/c.json" <<'JSON'
{"type": "clos2", "tors": 4, "aggs": 2, "hosts_per_tor": 4, "uplink_gbps": 400}
JSON
"$SIM" gen --cluster "$WORK/c.json" --jobs 100 --days 0.2 --seed 3 --out "$WORK/w.csv"
# its jobs, without the comment line that names the format's page
check "the workload is the pinned one" sh -c "
  test \"\$(grep -v '^#' '$WORK/w.csv' | sha256sum | cut -c1-64)\" = 70e215b95469d8acda01b7d6a465bf4a960d63c6ae5ffecae90330e30549574c"
check "run all policies" "$SIM" run --cluster "$WORK/c.json" --workload "$WORK/w.csv" --policy all \
  --placement random --seed 1 --bin 600 --out "$WORK/r" --quiet
# hashes of every output file; summary.csv without its timing columns
# (wall_s, cpu_s, events_per_cpu_s)
cat >"$WORK/pinned" <<'PIN'
d05b63d03ee8bf88d1d43ec934cb4cb48807c6376192fe805666efc6999914fc  jobs-cassini.csv
ab7d74afd44b5bf8f85c20df79c0e16893639bb655389d48fdd06ea26cb7a282  jobs-crux-full-paper.csv
453e01af0a1746f02527bf08d2418a50c659400f3499d6d9e265cc63f4fcf30c  jobs-crux-full.csv
e3d2a6c69d84455c6725daa18c2303282391407bbdae1ac1ffac5d9526279c6a  jobs-crux-pa.csv
9c06c5cc05f54574e1d5bd29e6698681d04a5b859797aa4c18077c56f3a218ed  jobs-crux-ps-pa.csv
d1006507640f6ea42390570095d0a78bb7bc39c6b2db4e6249c88626261e8d53  jobs-none.csv
d554539a72faca741e7268309cd4862956ca3a697570f72fb229fc5fb54a0f7e  jobs-sincronia.csv
b718b498e7af692d7e5d8a9b64b84333da77f71da49a92dbdc869a489f33c44a  jobs-taccl.csv
5808d65582dd1755fb6c1ebbf1bd2265c8d0594ee5aec9c3da5ca79ca3a405ae  links-cassini.csv
a169a7d73cc51a67df55c7d27a9d26d0aea6c6307944773294d4185dbc5abc5d  links-crux-full-paper.csv
206693028e0c06f503def28148f06d131232f4d29994c303f82f1614ecfb839a  links-crux-full.csv
d4159086b5f552f098a8d4afc1fa29a7c61ac0209e2919959376b4bada729eba  links-crux-pa.csv
f5c4afc1618df9d7207321a42721f97486e834ee43f5ace414faf8c5f8f5778e  links-crux-ps-pa.csv
4f29deacae892988d18e00c4dbb1f195026a5e7060ddfdb1744a7e45aa6cbcb7  links-none.csv
42f37601df78277731bbe4e7707daf8ff6b4a641906cd4072feb6ff394e0cfae  links-sincronia.csv
c96738bc092b0f4066a2883f3baf9b6fcf3a03887e1b6c7993cfceee4994b709  links-taccl.csv
1919681eea1135893257103d07dc98da018a06ff9ec89871ab332b32571b7b4a  summary.csv
c171dfd240acda51ced2bc1be53be4f021bb79b28166fa8b463b4045033d4bd7  util-cassini.csv
e450ea52864156ff59d4699d438ce12dc8c56f6f9aa10aa1f83b0f15d0fd680d  util-crux-full-paper.csv
298eda3fd912fe1d687f90b5d791f8da3fdb0b2042b439851971881a723e9858  util-crux-full.csv
692bc81a76bc19065c26e37054d68fa545391a69bf6be17c8bea597212882c7a  util-crux-pa.csv
e037c12cfe1513322787ee1b9a096c52db8457c34a1eb46759cf90a0cf2d7a51  util-crux-ps-pa.csv
b6708b6810560e544f70b932c61f482e4705da1e0553e5ca29467ac0cd726ef5  util-none.csv
bffb06b7dc52f7d8c951611e0fe135d8039a1e765e7c4695146bb46d023da6b5  util-sincronia.csv
93c94a9312816e41439f6b1817b558be25d502f18ae6be958c5ec6ff17b84ae1  util-taccl.csv
PIN
for f in $(cut -c67- "$WORK/pinned"); do
  if [ "$f" = summary.csv ]; then
    h=$(cut -d, -f1-19,23- "$WORK/r/$f" | sha256sum | cut -c1-64)
  else
    h=$(sha256sum <"$WORK/r/$f" | cut -c1-64)
  fi
  echo "$h  $f"
done >"$WORK/got"
# what moved: the summary and the files that differ (then every new hash,
# to pin the run anew when the change is meant)
pinned() {
  cmp -s "$WORK/pinned" "$WORK/got" && [ "$(ls "$WORK/r" | wc -l)" -eq "$(wc -l <"$WORK/pinned")" ] &&
    return 0
  echo "summary (policy, utilization, events, iterations skipped):"
  cut -d, -f1,6,16,19 "$WORK/r/summary.csv"
  echo "differ: $(diff "$WORK/pinned" "$WORK/got" | sed -n 's/^> .*  //p' | tr '\n' ' ')"
  return 1
}
check "every output file as pinned" pinned
cmp -s "$WORK/pinned" "$WORK/got" || sed 's/^/# new: /' "$WORK/got"
tap_done
