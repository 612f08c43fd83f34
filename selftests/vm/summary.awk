# SPDX-License-Identifier: GPL-2.0
# Turn TAP files and VM console logs into the failing names and one line
# "N passed, N failed" (", N skipped" when some were), after one line per
# lane (label other than -): "lane LABEL: N passed, N failed, N skipped".  Exit status 1 if any
# test failed or nothing ran.
#
# usage: awk -f summary.awk label=NAME FILE [label=NAME FILE]...
# (label=- : no prefix on the names of the following file)
#
# Every "ok N name" / "not ok N name" line counts, also nested ones
# ("# ok N name") as the kselftest runner prints them: test cases, not files.
# "# SKIP" (or "# TODO") after the name counts as skipped.  In a VM log a
# test program runs between "# wsem-vm: begin NAME" and "# wsem-vm: end NAME
# exit=E time=T": a program that failed (non-zero exit, timeout) without
# reporting a failing case counts as one failure, one that reported no case
# at all counts as one result by its exit status.  A VM log without
# "# wsem-vm: done" means the guest hung or died: one failure.
#
# Skips are expected: with expected=FILE (awk -v), each skip's name and
# reason ("LANE: program: case # SKIP reason") must match a line of FILE,
# an extended regular expression each (a line starting with # is a
# comment), or it counts as a failure too: a new skip is something lost,
# to be seen, then fixed or added.  Every skip is listed ("SKIPPED: ...",
# once, with " (xN)" if it was seen N times).
#
# TAP plans: a program's top-level "1..N" (or a plain TAP file's, outside
# any program) must match the number of top-level results it reported; a
# program that stopped half-way, or reported more than it planned, counts
# as one failure even with exit status 0.
#
# Each failure is followed by up to three "  why: " lines, so that the tail
# of a CI log says what failed, not only where.  In a kselftest program
# (it printed "TAP version" or "#  RUN") and for the harness's own checks
# in a VM log, the reason comes before the "not ok": a case's
# "file.c:N:case:Expected ..." line and its file's lines after it, how
# the case ended ("Test terminated by timeout"...), the kernel's report
# (runtests.sh's "# dmesg report: " lines), else the first lines the case
# printed.  Elsewhere (the host tests' check() and lint
# print a failing command's output after its "not ok"), the first comments
# after it.

function fail(name) {
	failed++
	failures[failed] = name
	nwhy[failed] = 0
}

# add_why(I, TEXT): one more line saying why failure I failed (three at most).
function add_why(i, text) {
	if (nwhy[i] >= 3)
		return
	sub(/^(# +)+/, "", text)
	if (length(text) > 200)
		text = substr(text, 1, 200) "..."
	whys[i, ++nwhy[i]] = text
}

# A failing result: in a kselftest program or among the harness's own
# checks, the comments before it (since the result before it) that say
# why; elsewhere, the comments that follow it will.
function why_of_failure(    i, from) {
	if (!ksft && !(isvm && cur == "")) {
		after = failed
		ncom = 0
		return
	}
	for (i = 1; i <= ncom; i++)
		if (com[i] ~ /^# *[A-Za-z0-9_.-]+\.c:[0-9]+:[^:]*:Expected /) {
			from = i
			break
		}
	for (i = (from ? from : 1); i <= ncom; i++) {
		if (from && com[i] ~ /^# *[A-Za-z0-9_.-]+\.c:[0-9]+:/)
			add_why(failed, com[i])
		else if (!from &&
			 com[i] ~ /: Test (terminated|exited|ended)|^# dmesg report: /)
			add_why(failed, com[i])
	}
	if (nwhy[failed]) {
		ncom = 0
		return
	}
	# else the block from its first line that is not blank, a RUN or a mark
	for (i = 1; i <= ncom; i++)
		if (com[i] !~ /^#[ \t]*$|^# +RUN |wsem-selftest: mark /)
			break
	for (; i <= ncom; i++)
		if (com[i] !~ /^#[ \t]*$/)
			add_why(failed, com[i])
	ncom = 0
}

function skip_seen(name) {
	skipped++
	skips[skipped] = name
}

# Does @name match a line of the file @expected?
function skip_expected(name,    line, i) {
	if (!loaded) {
		loaded = 1
		while ((getline line < expected) > 0) {
			if (line !~ /^#/ && line != "")
				pats[++npats] = line
		}
		close(expected)
	}
	for (i = 1; i <= npats; i++)
		if (name ~ pats[i])
			return 1
	return 0
}

function result(ok, skip, name) {
	if (skip)
		skip_seen(name)
	else if (ok)
		passed++
	else
		fail(name)
	if (cur != "") {
		if (skip)
			bskip++
		else if (ok)
			bpass++
		else
			bfail++
	}
}

# "planned N results, reported M" if a plan was seen and not kept, else "".
function plan_broken(plan, seen) {
	if (plan < 0 || seen == plan)
		return ""
	return "planned " plan " results, reported " seen
}

# End of one input file: what it left unfinished.
function endfile() {
	if (file == "")
		return
	if (cur != "")
		fail(prefix cur " (the guest hung or died while it ran)")
	if (isvm && !done)
		fail(prefix "the guest did not finish (hang, panic or timeout)")
	why = plan_broken(fplan, ftop)
	if (why != "")
		fail(prefix "TAP plan: " why)
	cur = ""
}

BEGIN { file = "" }

# lanetally(): what the file just ended added, to its label's lane.
function lanetally() {
	if (file == "" || flabel == "-" || flabel == "")
		return
	if (!(flabel in lp)) {
		nlanes++
		lanes[nlanes] = flabel
	}
	lp[flabel] += passed - p0
	lf[flabel] += failed - f0
	ls[flabel] += skipped - s0
}

FNR == 1 {
	ncom = after = ksft = 0
	endfile()
	lanetally()
	flabel = label
	p0 = passed; f0 = failed; s0 = skipped
	file = FILENAME
	prefix = label == "-" ? "" : (label != "" ? label : FILENAME) ": "
	isvm = 0
	done = 0
	cur = ""
	fplan = -1
	ftop = 0
}

{
	sub(/\r+$/, "")
	gsub(/\033(\[[0-9;?]*[A-Za-z]|c)/, "")
}

/^# wsem-vm: kernel / { isvm = 1; next }
/^# wsem-vm: done/ { done = 1; next }

/^# wsem-vm: begin / {
	ncom = after = ksft = 0
	cur = $4
	bpass = bfail = bskip = btop = 0
	bplan = -1
	next
}

/^# wsem-vm: end / {
	ncom = after = 0
	exitst = $5
	sub(/^exit=/, "", exitst)
	secs = $6
	sub(/^time=/, "", secs)
	if (exitst == "timeout")
		why = "timed out after " secs "s"
	else if (exitst + 0 > 128)
		why = "killed by signal " (exitst - 128)
	else
		why = "exit status " exitst
	name = cur
	cur = ""
	short = plan_broken(bplan, btop)
	if (exitst == "0" && bfail == 0 && short != "") {
		fail(prefix name " (TAP plan: " short ")")
	} else if (exitst != "0" && bfail == 0) {
		if (exitst == "4" && bpass + bskip == 0)
			skip_seen(prefix name)
		else
			fail(prefix name " (" why ")")
	} else if (exitst == "0" && bpass + bfail + bskip == 0) {
		passed++
	}
	next
}

# A plan: "1..N", maybe "1..0 # SKIP why".  Nested ones ("# 1..N") belong
# to nested results, which the plan does not count.
/^1\.\.[0-9]+( |$)/ {
	np = $1
	sub(/^1\.\./, "", np)
	if (cur != "")
		bplan = np + 0
	else
		fplan = np + 0
	next
}

/^(# )*(not )?ok( [0-9]+)?( |$)/ {
	if ($0 !~ /^# /) {
		if (cur != "")
			btop++
		else
			ftop++
	}
	line = $0
	sub(/^(# )*/, "", line)
	ok = (line !~ /^not /)
	sub(/^(not )?ok( [0-9]+)?( - | |$)/, "", line)
	skip = 0
	if (line ~ /# *([Ss][Kk][Ii][Pp]|[Tt][Oo][Dd][Oo])/)
		skip = 1
	# a skip is named with its reason: the harness's have no other name
	if (!skip)
		sub(/ *#.*$/, "", line)
	after = 0
	result(ok, skip, prefix (cur != "" ? cur ": " : "") line)
	if (ok || skip)
		ncom = 0
	else
		why_of_failure()
	next
}

# A kselftest program's first line, or one of its cases beginning.
/^TAP version / || /^# +RUN / {
	if (cur != "")
		ksft = 1
}

# A comment: kept (the last 500 at least) until the next result; the first
# ones after a failure that looks for its reason there are that reason.
/^#/ && !/^# wsem-vm: / {
	if (after && $0 !~ /^#[ \t]*$/)
		add_why(after, $0)
	if (ncom >= 1000) {
		for (i = 1; i <= 500; i++)
			com[i] = com[i + 500]
		ncom = 500
	}
	com[++ncom] = $0
	next
}

END {
	endfile()
	lanetally()
	if (passed + failed + skipped == 0)
		fail("no test results at all")
	# each skip once, with how many times it was seen (x8: a fixture's
	# eight cases skipped for one reason)
	for (i = 1; i <= skipped; i++)
		if (nskip[skips[i]]++ == 0)
			skiporder[++nskiporder] = skips[i]
	for (i = 1; i <= nskiporder; i++) {
		k = skiporder[i]
		print "SKIPPED: " k (nskip[k] > 1 ? " (x" nskip[k] ")" : "")
		if (expected != "" && !skip_expected(k))
			fail("a skip not in " expected ": " k)
	}
	for (i = 1; i <= failed; i++) {
		print "FAILED: " failures[i]
		for (j = 1; j <= nwhy[i]; j++)
			print "  why: " whys[i, j]
	}
	for (i = 1; i <= nlanes; i++)
		printf "lane %s: %d passed, %d failed, %d skipped\n", lanes[i],
		       lp[lanes[i]], lf[lanes[i]], ls[lanes[i]]
	if (skipped)
		print skipped " skipped (what the kernel lacks, see SKIP above)"
	print (passed + 0) " passed, " (failed + 0) " failed"
	exit failed ? 1 : 0
}
