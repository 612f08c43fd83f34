# SPDX-License-Identifier: GPL-2.0
# make bench-cluster's scale scenario: the table from scale-raw.txt (the
# guest's "@@scale" and "@@meta" lines: bench/cluster/scalesim_test.go).
# A change's window counts everything etcd was asked in it; what the idle
# window's rate gives for as long is taken away, leaving what the change
# cost.  Its requests per agent leave the lease renewals out (a renewal is
# sent every ttl/3 whatever changes, and the idle rate's share of them is
# noise here).  The old agent's idle looks each read the prefix, hold/2
# apart: its Range rate below what they ask says that etcd (or the guest)
# could not serve them, and then the idle rate taken away from a change's
# window is not what the window would have had without the change.

function r2(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "-" }

# count WORDS FROM: the requests (all but "sent:") in the key=value words
# from FROM on, into req[], and cpu=ETCD,SIM, seen=MED,MAX,LEFT
function count(from,    i, kv) {
	delete req
	tot = 0; ecpu = 0; scpu = 0; smed = ""; smax = ""; sleft = 0
	for (i = from; i <= NF; i++) {
		split($i, kv, "=")
		if (kv[1] == "cpu") {
			split(kv[2], c, ","); ecpu = c[1]; scpu = c[2]
		} else if (kv[1] == "seen") {
			split(kv[2], c, ","); smed = c[1]; smax = c[2]; sleft = c[3]
		} else if (kv[1] ~ /^sent:/) {
			req[kv[1]] = kv[2]
		} else {
			req[kv[1]] = kv[2]; tot += kv[2]
		}
	}
}

$1 == "@@meta" { meta[$2] = $3 }
$1 == "@@scale" && !(($3) in seenN) { seenN[$3] = 1; ns[++nn] = $3 }
$1 == "@@scale" && $4 == "start" { start[$2, $3] = $5 }
$1 == "@@scale" && $4 == "log" { logs[$2, $3] = $5 }
$1 == "@@scale" && $4 == "failed" { failed[$2, $3] = 1 }
$1 == "@@scale" && $4 == "idle" {
	count(6); k = $2 SUBSEP $3; d = $5
	itot[k] = tot / d; ika[k] = req["LeaseKeepAlive"] / d
	irng[k] = req["Range"] / d; iwr[k] = (req["Put"] + req["Txn"] + req["DeleteRange"]) / d
	iec[k] = ecpu / d; isc[k] = scpu / d
}
$1 == "@@scale" && ($4 == "up" || $4 == "down") {
	count(7); k = $2 SUBSEP $3; d = $6; n = $3
	w[k]++
	ctot[k] += (tot - req["LeaseKeepAlive"] - (itot[k] - ika[k]) * d) / n
	crng[k] += (req["Range"] - irng[k] * d) / n
	cwr[k] += req["Put"] + req["Txn"] + req["DeleteRange"]
	csent[k] += req["sent:Watch"] / n
	cec[k] += ecpu - iec[k] * d
	csc[k] += scpu - isc[k] * d
	if (smax != "" && smax != "-") {
		sn[k]++; smd[k] += smed; smx[k] += smax
		if (smax > slast[k]) slast[k] = smax
	}
	cleft[k] += sleft
	win = d
}

function row(label, fmt, a, b) {
	printf "   %-48s " fmt " " fmt " %8s\n", label, a, b, r2(b, a)
}

END {
	date = meta["date"]; gsub(/_/, " ", date)
	native = meta["where"] == "native"
	printf "wsem cluster bench, scale: %s, kernel %s, %s %s, git %s\n",
	       date, meta["kernel"], meta["cpus"],
	       native ? "CPUs, natively (not in a guest)" : "vCPUs (QEMU TCG)", meta["rev"]
	printf "host: load average %s at the start, %d other VM(s) running\n",
	       meta["load"], meta["others"]
	printf "old = the agent of %s (looks read etcd), new = this tree's (looks decide from\n", meta["old"]
	print  "the view kept from the watch); one process simulates every host through the"
	if (native) {
		print  "tree's own startWith and run (semaphores faked); a 3-member etcd on the"
		print  "loopback of a network namespace of its own (all at nice 19), new for each"
		printf "run; policy finish, ttl=%s s, hold=%s ms (%s ms on the\n", meta["ttl"] ? meta["ttl"] : 10, meta["hold"], meta["holdmoved"]
	} else {
		print  "tree's own startWith and run (semaphores faked); a 3-member etcd on the guest's"
		printf "loopback, new for each run; policy finish, ttl=%s s, hold=%s ms (%s ms on the\n", meta["ttl"] ? meta["ttl"] : 10, meta["hold"], meta["holdmoved"]
	}
	printf "3 hosts whose demand changes); one etcd client per %s hosts; each host holds 1\n", meta["per_client"]
	print  "of a capacity of 2 x hosts; requests = every member's"
	print  "grpc_server_msg_received_total (a lease renewal or a watch's creation is one);"
	print  "CPU = utime + stime (/proc/PID/stat) of the 3 members, and of the simulator"
	print  "(all its agents); a change: one host's need 1 -> 2 (up) or 2 -> 1 (down), its"
	printf "window (the last) %s s, less what the idle rate gives for as long; ratios = new / old\n", win
	for (i = 1; i <= nn; i++) {
		n = ns[i]; o = "old" SUBSEP n; e = "new" SUBSEP n
		printf "\n%d hosts (start: old %s s, new %s s)\n", n, start[o], start[e]
		printf "   %-48s %10s %10s %8s\n", "", "old", "new", "new/old"
		print  "   idle, per second:"
		row("etcd requests", "%10.1f", itot[o], itot[e])
		row("  of them lease renewals (LeaseKeepAlive)", "%10.1f", ika[o], ika[e])
		row("  of them Range", "%10.1f", irng[o], irng[e])
		row("  of them writes (Put, Txn, DeleteRange)", "%10.1f", iwr[o], iwr[e])
		row("etcd requests per agent", "%10.3f", itot[o] / n, itot[e] / n)
		# the old agent's idle looks read the prefix each: hold/2 apart
		want = (n - 3) * 2000 / meta["hold"] + 3 * 2000 / meta["holdmoved"]
		printf "   %-48s %9.0f%%\n", "  Range as % of the old agent's idle looks", 100 * irng[o] / want
		row("etcd CPU, ms per s (3 members)", "%10.1f", iec[o], iec[e])
		row("the agents' CPU, ms per s (the simulator)", "%10.1f", isc[o], isc[e])
		printf "   one host's change of demand (mean of %d windows; old %d):\n", w[e], w[o]
		row("etcd requests per agent, renewals aside", "%10.2f", ctot[o] / w[o], ctot[e] / w[e])
		row("  of them Range per agent", "%10.2f", crng[o] / w[o], crng[e] / w[e])
		row("writes per change (Put, Txn, DeleteRange)", "%10.1f", cwr[o] / w[o], cwr[e] / w[e])
		row("watch messages etcd sent per agent", "%10.2f", csent[o] / w[o], csent[e] / w[e])
		row("ms until the median agent saw it", "%10.0f", sn[o] ? smd[o] / sn[o] : -1, sn[e] ? smd[e] / sn[e] : -1)
		row("ms until every agent saw it (mean)", "%10.0f", sn[o] ? smx[o] / sn[o] : -1, sn[e] ? smx[e] / sn[e] : -1)
		row("ms until every agent saw it (largest)", "%10.0f", slast[o], slast[e])
		row("agents that had not by the window's end", "%10d", cleft[o], cleft[e])
		row("etcd CPU per change, ms (3 members)", "%10.0f", cec[o] / w[o], cec[e] / w[e])
		row("the agents' CPU per change, ms", "%10.0f", csc[o] / w[o], csc[e] / w[e])
		printf "   agents' log lines other than share and loan moves: old %d, new %d\n",
		       logs[o], logs[e]
		if (failed[o] || failed[e])
			printf "   FAILED: %s%s (the simulator ended before its last window)\n",
			       failed[o] ? "old " : "", failed[e] ? "new" : ""
	}
}
