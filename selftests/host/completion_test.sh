#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The bash completion (userlib/completion/wsem.bash), in TAP: verbs,
# options of each verb, and names from "wsem ls -n -o name", here a
# stand-in wsem on PATH that prints fixed names (the host has no module)
# and refuses any other call.  Also that
# every option the completion offers is one the real wsem accepts (its
# VERB --help lists it), so the two cannot drift apart.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
n=0
failed=0

mkdir "$T/bin"
cat >"$T/bin/wsem" <<'EOS'
#!/bin/sh
[ "$*" = "ls --noheadings -o name" ] || exit 2
printf 'build\nbuilds\ngpu\n'
EOS
chmod +x "$T/bin/wsem"
printf '#!/bin/sh\n' >"$T/bin/wsemtestcmd"
chmod +x "$T/bin/wsemtestcmd"
PATH=$T/bin:$PATH
# shellcheck source=/dev/null
. "$ROOT/userlib/completion/wsem.bash"

# comp WANT WORD...: completing the last WORD of "WORD..." offers WANT
# (sorted, space-separated).
comp() {
	local want=$1 got
	shift
	COMP_WORDS=("$@")
	COMP_CWORD=$(($# - 1))
	_wsem
	got=$(printf '%s\n' "${COMPREPLY[@]}" | sed '/^$/d' | sort -u | xargs)
	n=$((n + 1))
	if [ "$got" = "$want" ]; then
		echo "ok $n - wsem ${*:2}<TAB>: $want"
	else
		echo "not ok $n - wsem ${*:2}<TAB>: got '$got', want '$want'"
		failed=$((failed + 1))
	fi
}

echo "1..33"
comp "release resize rm run" wsem r
comp "lend" wsem le
comp "--loans" wsem create x 4 --lo
comp "wsemtestcmd" wsem lend gpu 2 -- wsemtest
comp "acquire apply" wsem a
comp "wait" wsem w
comp "create" wsem cr
comp "apply" wsem ap
comp "build builds" wsem stat bu
comp "gpu" wsem run g
comp "build builds gpu" wsem rm ""
comp "--weight" wsem run build --we
comp "--exclusive --exist-ok" wsem create x 4 --ex
comp "--help --json --long --noheadings --output" wsem ls --
comp "all" wsem run build --weight ""
comp "all" wsem acquire --fd 9 --weight a
comp "--fd" wsem release --f
comp "create" wsem help cr
comp "wsemtestcmd" wsem run build -- wsemtest
comp "--force" wsem rm --f
comp "--verbose" wsem run build --verb
comp "-V" wsem -V
comp "--json" wsem wait build --j
comp "--parent --parent-fd" wsem create x 4 --par
comp "gpu" wsem create x 4 --parent g
comp "--and" wsem run build --an
comp "build builds" wsem run gpu -a bu
comp "gpu" wsem run build --and g
comp "gpu" wsem create x 4 -p g
comp "" wsem create x 4 --parent-fd ""

# With bash-completion loaded, COMMAND's words go to COMMAND's own
# completion: _command_offset, here a stand-in that offers what it was
# told, is called with the index of COMMAND's word.
# shellcheck disable=SC2317 # called by _wsem
_command_offset() {
	COMPREPLY=("offset$1" "${COMP_WORDS[$1]}")
}
comp "offset4 wsemtestcmd" wsem run build -- wsemtestcmd --x
unset -f _command_offset

# Every long option offered is one the real wsem knows.
n=$((n + 1))
bad=
for verb in create rm ls stat top resize run lend acquire release wait apply; do
	"$ROOT/userlib/wsem" "$verb" --help >"$T/help" || bad="$bad $verb"
	for o in $(_wsem_opts "$verb"); do
		grep -q -- "$o\\b" "$T/help" || bad="$bad $verb:$o"
	done
done
if [ -z "$bad" ]; then
	echo "ok $n - every option offered is in the verb's --help"
else
	echo "not ok $n - options offered but unknown:$bad"
	failed=$((failed + 1))
fi

# ... and every option a verb's --help lists (short and long) is offered:
# a new option cannot be left out of the completion.
n=$((n + 1))
missing=
for verb in create rm ls stat top resize run lend acquire release wait apply; do
	offered=" $(_wsem_opts "$verb" | tr -s " \n" "  ") "
	for o in $("$ROOT/userlib/wsem" "$verb" --help |
		   sed -n 's/^  \(-[a-zA-Z0-9]\)\?,\? *\(--[a-z-]*\)\?.*/\1 \2/p'); do
		case $offered in
		*" $o "*) ;;
		*) missing="$missing $verb:$o" ;;
		esac
	done
done
if [ -z "$missing" ]; then
	echo "ok $n - every option of a verb's --help is offered"
else
	echo "not ok $n - options in --help but not offered:$missing"
	failed=$((failed + 1))
fi
[ $failed -eq 0 ]
