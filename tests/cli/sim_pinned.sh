#!/bin/sh
# crux-sim's results, pinned: a small random-placement run under every
# policy (100 jobs on an oversubscribed two-layer Clos: contention, replans,
# shortcuts and fast-forward all happen) must give these exact files.  A
# change meant only to make the simulator faster must keep them; a change
# meant to move results replaces the hashes below with the ones printed on
# failure ("# new:" lines) and says why in its commit.  x86-64 only: other
# targets may round differently (fused multiply-adds).
. "$(dirname "$0")/sched_tap.sh"
SIM=${CRUX_SIM:-../sim/crux-sim}

if [ "$(uname -m)" != x86_64 ]; then
  echo "1..0 # SKIP results pinned for x86-64"
  exit 0
fi
cat >"$WORK/c.json" <<'JSON'
{"type": "clos2", "tors": 4, "aggs": 2, "hosts_per_tor": 4, "uplink_gbps": 400}
JSON
"$SIM" gen --cluster "$WORK/c.json" --jobs 100 --days 0.2 --seed 3 --out "$WORK/w.csv"
check "the workload is the pinned one" sh -c "
  test \"\$(sha256sum <'$WORK/w.csv' | cut -c1-64)\" = ce8b3d49a9d3f182b093f601958aec01c0aed8a441bf68f79cbc41166115b286"
check "run all policies" "$SIM" run --cluster "$WORK/c.json" --workload "$WORK/w.csv" --policy all \
  --placement random --seed 1 --bin 600 --out "$WORK/r" --quiet
# hashes of every output file; summary.csv without its timing columns
# (wall_s, cpu_s, events_per_cpu_s)
cat >"$WORK/pinned" <<'PIN'
fae4aefbbd7d95cc38fb1dbec55baf0c7dc78d6776572c8232f0277e9f2e4f94  jobs-cassini.csv
c2443499af8df812faa548717193efe12a6253a433fe7257d2ec6f6e8a05c80e  jobs-crux-full-paper.csv
26339db1944d0d5b4f55c6ecad45165dcca3b1eb0f5e5975021b0b1e36720082  jobs-crux-full.csv
6e661929ece29dc44fe39d2a47256dd2721bce1f983439681ad02211aa64f9a0  jobs-crux-pa.csv
9060e6798fa9a21858832ac5677662ae114fc4036a2e2c4b5d44f704bd2db6dd  jobs-crux-ps-pa.csv
7b7c968db71e51b83e5b4cb0101e85d20462843df07e2d280c33ed827e986e92  jobs-none.csv
32cf49a33433acc6da3a4f425939af3b1ab1f2000a9e7615e703d409a2ad7a18  jobs-sincronia.csv
4d3023edf4c92ceceb65dde4613231c6068c2780ed6ca88b301fad7e339040c6  jobs-taccl.csv
f370a48060b4f1171488ced465ff33b325fe07a0f3a52e1be251ba6e471fc583  links-cassini.csv
4f81b3324444e3ed971153c64a3fadda3e095b35b6dbbc4e0a395b4f1a822ced  links-crux-full-paper.csv
da9f6edab97172c4f7bb2f374b1371cf538746056c69aad07d6d11aae68db211  links-crux-full.csv
48ee95ce399c83bf54fc4b2d9df0be06d694c968fdb6031faf4d0f09b2f0a6a7  links-crux-pa.csv
4f81b3324444e3ed971153c64a3fadda3e095b35b6dbbc4e0a395b4f1a822ced  links-crux-ps-pa.csv
d182e3fc21f514140a69c9d6695b402a828eef6dc9d47bd25efbc0bd47ce775a  links-none.csv
6f2cd4868adcbd90d4496ae3b24c5acc2c506146ed6f0204d9f788e89dbe10f0  links-sincronia.csv
d1eeef28aaffad427e2686f3e7e53105f465748ffc2a769a141e4be71b69f3c2  links-taccl.csv
2547c6983c5285f2e8e10c545d4a0c4b923aec802b9835e7b94d64c23c15674c  summary.csv
99931b4dcff94c7d6e0a073bb57202945fbd5537d04224866694ad76e5a80006  util-cassini.csv
4528b7f20c215adc5650b9fa70775ab22a0ba580f97229236ac2b9374a374cda  util-crux-full-paper.csv
be6e3db4c796617ee0d96f0a1688ffd562da31eedeb80908d703964f34c1a5f7  util-crux-full.csv
cde74fea01faab25309be6d0572ebb70452ff6c6d0a6f9f350bb31bb3f2b7696  util-crux-pa.csv
4528b7f20c215adc5650b9fa70775ab22a0ba580f97229236ac2b9374a374cda  util-crux-ps-pa.csv
e0bab6087bd730c30640f1084f4a847a781f4debb45ba6d989c13f5b5f67293b  util-none.csv
453374c0af54b768d701923d402e96b4a713f4c3a7944e5e13dfac8c939a984e  util-sincronia.csv
bfdb1f0f472946caad2a56c0836348ec09092f294e76642078e4fe05461ea09a  util-taccl.csv
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
