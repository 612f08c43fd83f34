# SPDX-License-Identifier: GPL-2.0-or-later
# bash completion for wsem(1): verbs, each verb's options, and semaphore
# names from "wsem ls" (of the IPC namespace the shell is in).

_wsem_verbs="create rm ls stat top resize run lend acquire release wait apply"

# The names "wsem ls" shows, one a line.
_wsem_names()
{
	wsem ls --noheadings -o name 2>/dev/null
}

# The options of verb $1.
_wsem_opts()
{
	case $1 in
	create) echo "-m --mode -x --exclusive --exist-ok --loans -p --parent" \
		     "--parent-fd -h --help" ;;
	rm) echo "-f --force -h --help" ;;
	top) echo "-n --rounds -d --delay -h --help" ;;
	ls) echo "-l --long -o --output -n --noheadings --json -h --help" ;;
	stat) echo "--json --fd -h --help" ;;
	resize) echo "--fd -h --help" ;;
	lend) echo "--fd -h --help" ;;
	wait) echo "-i --idle -t --timeout --fd --json -h --help" ;;
	apply) echo "-n --dry-run --prune -v --verbose -h --help" ;;
	acquire) echo "--fd --weight -t --timeout -n --nonblock -E" \
		      "--conflict-exit-code --label -h --help" ;;
	release) echo "--fd --weight -h --help" ;;
	run) echo "--weight -t --timeout -n --nonblock -E" \
		  "--conflict-exit-code --create -m --mode --inherit" \
		  "--jobserver --fd -v --verbose --json -a --and -h --help" ;;
	esac
}

_wsem()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local verb=${COMP_WORDS[1]} i

	COMPREPLY=()
	if [ "$COMP_CWORD" -eq 1 ]; then
		mapfile -t COMPREPLY < <(compgen -W \
			"$_wsem_verbs help -h --help -V --version" \
			-- "$cur")
		return
	fi
	# After "--" in run and lend, the rest is COMMAND's: its own completion, as
	# sudo's and env's hand over (bash-completion's _command_offset);
	# without bash-completion, commands, then files.
	for ((i = 2; i < COMP_CWORD; i++)); do
		if { [ "$verb" = run ] || [ "$verb" = lend ]; } &&
		   [ "${COMP_WORDS[i]}" = -- ]; then
			if declare -F _command_offset >/dev/null; then
				_command_offset $((i + 1))
			elif [ "$i" -eq $((COMP_CWORD - 1)) ]; then
				mapfile -t COMPREPLY < <(compgen -c -- "$cur")
			else
				mapfile -t COMPREPLY < <(compgen -f -- "$cur")
			fi
			return
		fi
	done
	case $prev in
	--weight)
		[ "$verb" = run ] || [ "$verb" = acquire ] &&
			mapfile -t COMPREPLY < <(compgen -W "all" -- "$cur")
		return ;;			# a number, or all
	-t | --timeout | -E | --conflict-exit-code | --create | -m | \
	--mode | --fd | --parent-fd)
		return ;;			# a value: nothing to offer
	-p | --parent | -a | --and)
		# a semaphore: a name, or a path (a wsemfs file)
		mapfile -t COMPREPLY < <(compgen -W "$(_wsem_names)" -- "$cur")
		if [ "${cur#*/}" != "$cur" ]; then
			mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(
				compgen -f -- "$cur")
		fi
		return ;;
	esac
	if [ "${cur#-}" != "$cur" ]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_wsem_opts "$verb")" \
			-- "$cur")
		return
	fi
	case $verb in
	help)
		mapfile -t COMPREPLY < <(compgen -W \
			"$_wsem_verbs" -- "$cur") ;;
	rm | stat | resize | run | lend | create | wait)
		mapfile -t COMPREPLY < <(compgen -W "$(_wsem_names)" -- "$cur")
		# a path: a wsemfs file
		if [ "${cur#*/}" != "$cur" ]; then
			mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(
				compgen -f -- "$cur")
		fi ;;
	apply)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
	esac
}

complete -F _wsem wsem
