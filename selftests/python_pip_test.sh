#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The Python binding as a new user meets it, in the test VM with Debian's
# python3: pip install of bindings/python into a venv (offline, no build
# isolation), then a ten-line asyncio script in two processes at once
# whose coroutines the semaphore gates together.  A program of its own,
# for its own time: pip under TCG takes half a minute, three on the debug
# kernel.  The test is in python/wsem_test.py (group "pip").

if [ ! -c /dev/wsem ]; then
	echo "1..0 # SKIP no /dev/wsem: the wsem module is not loaded"
	exit 4
fi
if [ ! -x /usr/bin/python3 ]; then
	echo "Bail out! no /usr/bin/python3 in the guest"
	exit 1
fi
exec /usr/bin/python3 "$(dirname "$0")/python/wsem_test.py" --group pip "$@"
