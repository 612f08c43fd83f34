# SPDX-License-Identifier: GPL-2.0
# The plot of a wsem-bench run, from its results.dat:
#   gnuplot -e "datafile='results.dat'; outfile='results.png'; title='...'" plot.gp

if (!exists("datafile")) datafile = 'results.dat'
if (!exists("outfile")) outfile = 'results.png'
if (!exists("title")) title = 'wsem-bench'

set terminal pngcairo size 1500,950 font ",10" noenhanced
set output outfile
set datafile missing "nan"
set style fill solid 0.8 border -1
set boxwidth 0.6
set grid ytics
set key top left
peers = "wsem sem_t sysv eventfd flock"
label(p) = p eq "sysv" ? "SysV+UNDO" : p eq "eventfd" ? "eventfd" : p
pick(p) = (strcol(2) eq p) ? $3 : NaN

set multiplot layout 2,3 title title font ",13"

set title "1. Uncontended acquire+release (ns, median; lower is better)"
set xtics rotate by -30 scale 0
set yrange [0:*]
plot datafile index 'uncontended' using 1:3:xtic(2) with boxes lc rgb "#4477aa" notitle, \
     '' index 'uncontended' using 1:3:(sprintf("%.2f", $5)) with labels offset 0,0.7 notitle

set title "2. Strict hand-off, two processes (hand-offs/s; higher is better)"
plot datafile index 'handoff' using 1:3:xtic(2) with boxes lc rgb "#228833" notitle, \
     '' index 'handoff' using 1:3:(sprintf("%.2f", $6)) with labels offset 0,0.7 notitle

set title "4. Full-capacity request among weight-1 ones: largest wait (ms, log)"
set logscale y
set yrange [*:*]
plot datafile index 'fairness' using 1:($5/1e6):xtic(2) with boxes lc rgb "#cc6677" notitle, \
     '' index 'fairness' using 1:($5/1e6):(sprintf("%.1f", $6)) with labels offset 0,0.7 notitle
unset logscale y

set xtics norotate scale 1
set title "3. Contention, capacity 1: grants/s (log) vs processes"
set xlabel "processes"
set logscale y
set xtics (2, 4, 8)
plot for [p in peers] datafile index 'contention-c1' using 1:(pick(p)) \
     with linespoints lw 2 title label(p)

set title "3. Contention, capacity 4: grants/s (log) vs processes"
plot for [p in peers] datafile index 'contention-c4' using 1:(pick(p)) \
     with linespoints lw 2 title label(p)

set title "5. Release to next grant with N queued (ns, median, log-log)"
set xlabel "queued waiters"
set logscale xy
set xtics (1, 10, 100, 1000, 10000)
plot for [p in peers] datafile index 'scale-'.p using 1:2 \
     with linespoints lw 2 title label(p)

unset multiplot
