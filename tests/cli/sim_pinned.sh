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
d05b63d03ee8bf88d1d43ec934cb4cb48807c6376192fe805666efc6999914fc  jobs-cassini.csv
79e6cceeb6cdf444d006c35e483500a0e84384dee69d84b910d4890eaada38db  jobs-crux-full-paper.csv
0bc5db9cd4fd610b989cd0c8552e68e37244e50a5a498b92ff1bac1adaef289a  jobs-crux-full.csv
11b197c06915a97403cc58eb3e6f9e713baaccf8a2035ee3fb5b51522e2e3ac8  jobs-crux-pa.csv
cdcf3eb3e08a02cb6dcde232d1f19dfca1f0a577c1b869694be564a24dd98e82  jobs-crux-ps-pa.csv
d1006507640f6ea42390570095d0a78bb7bc39c6b2db4e6249c88626261e8d53  jobs-none.csv
0c5e49a8a525af450fffe9a98693dadb1527c03a21b4a47934bfa4c765526a95  jobs-sincronia.csv
b718b498e7af692d7e5d8a9b64b84333da77f71da49a92dbdc869a489f33c44a  jobs-taccl.csv
5808d65582dd1755fb6c1ebbf1bd2265c8d0594ee5aec9c3da5ca79ca3a405ae  links-cassini.csv
a6e4d56b6ab8d1c01c3575f7b36aca613a4be9c0ce5c6e077132a71c81eadc96  links-crux-full-paper.csv
5394893f6c906056bdd2df693b79da5b90cb630c8b820b3766c488d0daa35dde  links-crux-full.csv
9463b20210d234bf75fe6d354625b110b857cc340b78c5a826c9b0c7e326cf58  links-crux-pa.csv
a6e4d56b6ab8d1c01c3575f7b36aca613a4be9c0ce5c6e077132a71c81eadc96  links-crux-ps-pa.csv
4f29deacae892988d18e00c4dbb1f195026a5e7060ddfdb1744a7e45aa6cbcb7  links-none.csv
bd17d71caf7b8537274f47a134d165d8b5d6b6a17d760bf0ae63573c5dbb29d1  links-sincronia.csv
c96738bc092b0f4066a2883f3baf9b6fcf3a03887e1b6c7993cfceee4994b709  links-taccl.csv
d3a8fed7f7dd8a0d854953c0c1ffcd4ba84b2c00d9020b05c46d13608483173c  summary.csv
c171dfd240acda51ced2bc1be53be4f021bb79b28166fa8b463b4045033d4bd7  util-cassini.csv
61d3b33acff6fdd8a99194b9921552ef03599a3e04ee73fa1aae662db9b4de6e  util-crux-full-paper.csv
386f04d088e9bb075b17f83e99f6a1e1a9d48727e960e9be258a773f355e0622  util-crux-full.csv
16c1e4248773a569fabf07458d4ee5c6305e8313108d682de6bb6e6f6e3af87b  util-crux-pa.csv
61d3b33acff6fdd8a99194b9921552ef03599a3e04ee73fa1aae662db9b4de6e  util-crux-ps-pa.csv
b6708b6810560e544f70b932c61f482e4705da1e0553e5ca29467ac0cd726ef5  util-none.csv
7f281a655f52ca3c5d50d56cecf1d17436c93b20f2d10b5dc44a89e2bfbf1779  util-sincronia.csv
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
