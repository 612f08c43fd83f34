#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# wsem top on a terminal (a pty of python3's) turns echo and line editing
# off, and puts them back on every way out, whatever the shell: q; the
# last of -n rounds; ^C (SIGINT from the terminal: top dies of it, as it
# would uncaught); SIGTERM and SIGHUP.  wsem run on a terminal passes the
# terminal's ^C, which reaches COMMAND's group alone, on to its caller.  dash, bash and busybox sh do not
# restore a terminal a child left raw.  Runs as root in the test VM,
# which has python3 for it (mkinitramfs.sh); TAP on stdout.

# shellcheck source-path=SCRIPTDIR source=util.sh
. "$(dirname "$0")/util.sh"
need_module_and_python3
T=$(mktemp -d /tmp/top_tty_test.XXXXXX) || exit 1

# ptywait.py: reap(pid, fd, secs, what): drain the pty while waiting for
# its child to end; its wait status, or the script ends (SIGKILL) saying
# that WHAT did not end within SECS.
cat >"$T/ptywait.py" <<'EOP'
import os, select, signal, sys, time
def reap(pid, fd, secs, what):
    end = time.monotonic() + secs
    while True:
        try:
            if select.select([fd], [], [], 0.2)[0]:
                os.read(fd, 4096)
        except OSError:
            pass
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() > end:
            os.kill(pid, signal.SIGKILL)
            sys.exit(what + " did not end")
EOP

# top_pty.py HOW ARGS...: wsem top ARGS on a new pty; once it has drawn a
# round, HOW (q: type q; intr: type ^C; TERM, HUP: that signal; none:
# nothing); then, top gone, echo and canonical mode must be on again, and
# its status as HOW wants.
cat >"$T/top_pty.py" <<'EOP'
import os, pty, select, signal, sys, termios, time
from ptywait import reap
how, args = sys.argv[1], sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp("wsem", ["wsem", "top"] + args)
out, end = b"", time.monotonic() + 10
while b"round 1" not in out and time.monotonic() < end:
    if select.select([fd], [], [], 0.2)[0]:
        out += os.read(fd, 4096)
if b"round 1" not in out:
    sys.exit("no round drawn: %r" % out)
lflag = termios.tcgetattr(fd)[3]
if lflag & (termios.ECHO | termios.ICANON):
    sys.exit("echo or canonical mode still on while top runs")
if how == "q":
    os.write(fd, b"q")
elif how == "intr":
    os.write(fd, b"\x03")
elif how != "none":
    os.kill(pid, getattr(signal, "SIG" + how))
status = reap(pid, fd, 10, "top")
lflag = termios.tcgetattr(fd)[3]
print("top ended: status %#x, lflag %#o" % (status, lflag))
want = {"q": None, "none": None, "intr": signal.SIGINT,
        "TERM": signal.SIGTERM, "HUP": signal.SIGHUP}[how]
if want is None and not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
    sys.exit("top did not exit 0")
if want is not None and not (os.WIFSIGNALED(status) and
                             os.WTERMSIG(status) == want):
    sys.exit("top did not die of signal %d" % want)
if (lflag & (termios.ECHO | termios.ICANON)) != termios.ECHO | termios.ICANON:
    sys.exit("the terminal was left without echo or canonical mode")
EOP

check "q: the terminal is put back, exit 0" python3 "$T/top_pty.py" q -d 0.2
check "-n 3: after the last round, exit 0" python3 "$T/top_pty.py" none -n 3 -d 1
check "^C: the terminal is put back, top dies of SIGINT" \
	python3 "$T/top_pty.py" intr -d 0.2
check "SIGTERM: put back, dies of it" python3 "$T/top_pty.py" TERM -d 0.2
check "SIGHUP: put back, dies of it" python3 "$T/top_pty.py" HUP -d 0.2

# run_pty.py NAME: on a new pty, a bash loop of two wsem runs of COMMAND;
# once the first COMMAND runs, the terminal's ^C (to COMMAND's group, the
# foreground one then): wsem passes it on to its own group, so bash's loop
# ends at once, as it would without wsem.
cat >"$T/run_pty.py" <<'EOP'
import os, pty, select, signal, sys, time
from ptywait import reap
name, tmp = sys.argv[1], sys.argv[2]
started, loop = tmp + "/started", tmp + "/loop"
script = ('for i in 1 2; do wsem run %s -- sh -c "touch %s; sleep 20"; '
          'echo $i >>%s; done; echo end >>%s' % (name, started, loop, loop))
pid, fd = pty.fork()
if pid == 0:
    os.execvp("bash", ["bash", "-c", script])
end = time.monotonic() + 10
while not os.path.exists(started) and time.monotonic() < end:
    if select.select([fd], [], [], 0.1)[0]:
        os.read(fd, 4096)
if not os.path.exists(started):
    sys.exit("COMMAND never started")
time.sleep(0.3)
os.write(fd, b"\x03")
status = reap(pid, fd, 10, "bash's loop")
if os.path.exists(loop):
    sys.exit("the loop went on: %r" % open(loop).read())
if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGINT):
    sys.exit("bash did not die of SIGINT: status %#x" % status)
EOP
wsem create "tty-run-$$" 1 >/dev/null
check "run: the terminal's ^C to COMMAND ends the caller's loop" \
	python3 "$T/run_pty.py" "tty-run-$$" "$T"
wsem rm "tty-run-$$"
rm -rf "$T"
tap_end
