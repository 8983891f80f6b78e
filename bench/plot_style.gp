# Line styles shared by crux's gnuplot plots (bench/hier_bench.sh,
# bench/sim_compare.sh): eight line types told apart by colour, by dash
# pattern and by marker, so they stay apart in grey print too.  The colours
# are Okabe and Ito's colour-blind-safe set with its yellow, unreadable on
# white, replaced by grey.  Line type k also fills histogram bar k with
# pattern k - 1 (hatches in pngcairo), so bars differ without colour.
set linetype 1 lc rgb '#000000' dt 1         lw 2 pt 7  ps 1.0
set linetype 2 lc rgb '#E69F00' dt 2         lw 2 pt 5  ps 1.0
set linetype 3 lc rgb '#56B4E9' dt 3         lw 2 pt 9  ps 1.2
set linetype 4 lc rgb '#009E73' dt 4         lw 2 pt 13 ps 1.2
set linetype 5 lc rgb '#0072B2' dt 5         lw 2 pt 4  ps 1.0
set linetype 6 lc rgb '#D55E00' dt (12,4,2,4,2,4) lw 2 pt 6  ps 1.0
set linetype 7 lc rgb '#CC79A7' dt (20,6)    lw 2 pt 8  ps 1.2
set linetype 8 lc rgb '#777777' dt (2,6)     lw 2 pt 12 ps 1.2
set linetype cycle 8
set grid lc rgb '#DDDDDD' dt 1
