#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The Python binding as a new user meets it, in the test VM with Debian's
# python3: pip install of bindings/python into a venv (offline, no build
# isolation), then a ten-line asyncio script in two processes at once
# whose coroutines the semaphore gates together.  A program of its own,
# for its own time: pip under TCG takes half a minute, three on the debug
# kernel.  The test is in python/wsem_test.py (group "pip").

# shellcheck source-path=SCRIPTDIR source=util.sh
. "$(dirname "$0")/util.sh"
need_module_and_python3
exec /usr/bin/python3 "$(dirname "$0")/python/wsem_test.py" --group pip "$@"
