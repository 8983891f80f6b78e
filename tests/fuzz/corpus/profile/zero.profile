crux-profile 1
# a comment
job j
ranks 2
hosts h:2
window_s 1
collectives 0
bytes 0
coll_s 0
gap_s 0
period_s 0
unknown_key 5
