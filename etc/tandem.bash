# bash completion for tandemctl and tandemd: commands, options and, after
# --node, the config's node names. The words
# come from the programs' own --help, so completion cannot drift from them.
# make install puts this file in bash-completion's completions directory
# under both names; or source it from ~/.bashrc.

# _tandem_words PROGRAM [COMMAND]: the long options its --help describes
# (the lines that begin with an option).
_tandem_words() {
	"$@" --help 2>/dev/null |
	    sed -n 's/^ *\(-[a-z], \)\{0,1\}\(--[a-z][a-z0-9-]*\).*/\2/p'
}

# _tandem_nodes: the node names of the config on the command line (-c F,
# --config F, $TANDEM_CONFIG or the default), as tandemctl plan --json
# lists them.
_tandem_nodes() {
	local i cfg=()
	for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
		case ${COMP_WORDS[i]} in
		-c|--config) cfg=(--config "${COMP_WORDS[i+1]}");;
		esac
	done
	"${COMP_WORDS[0]}" "${cfg[@]}" plan --json 2>/dev/null |
	    sed -n '/"nodes"/,$ s/^ *"name": "\(.*\)",$/\1/p'
}

_tandemctl() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local prog=${COMP_WORDS[0]} cmd= i
	case $prev in
	-c|--config|--token-file|--prompts|-o|--output|--identity|--known-hosts)
		COMPREPLY=($(compgen -f -- "$cur")); return;;
	--format)
		COMPREPLY=($(compgen -W "table markdown json csv" -- "$cur")); return;;
	--node)
		COMPREPLY=($(compgen -W "$(_tandem_nodes)" -- "$cur")); return;;
	--api|--url|--model|--concurrency|--requests|--max-tokens|--temperature|\
	--prompt|--timeout|--max-p95|--head|--worker|--image|--user|--name|\
	--listen|--link|--accept-fingerprint)
		COMPREPLY=(); return;;
	esac
	# The command: the first word that is neither an option nor its value.
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-c|--config|--api|--token-file|-o|--output) ((i++));;
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break;;
		esac
	done
	if [[ $cmd == wait && $cur != -* && $prev == wait ]]; then
		COMPREPLY=($(compgen -W "$("$prog" wait --help 2>/dev/null |
		    sed -n 's/^STATE is one of: //p')" -- "$cur"))
	elif [[ -z $cmd && $cur != -* ]]; then
		COMPREPLY=($(compgen -W "$("$prog" --help 2>/dev/null |
		    sed -n '/^commands:/,/^$/s/^  \([a-z][a-z]*\).*/\1/p')" -- "$cur"))
	elif [[ -z $cmd ]]; then
		COMPREPLY=($(compgen -W "$(_tandem_words "$prog")" -- "$cur"))
	else
		COMPREPLY=($(compgen -W "$(_tandem_words "$prog" "$cmd")" -- "$cur"))
	fi
}

_tandemd() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	case $prev in
	-c|--config) COMPREPLY=($(compgen -f -- "$cur")); return;;
	--state-dir) COMPREPLY=($(compgen -d -- "$cur")); return;;
	--timeout) COMPREPLY=(); return;;
	esac
	COMPREPLY=($(compgen -W "$(_tandem_words "${COMP_WORDS[0]}")" -- "$cur"))
}

complete -F _tandemctl tandemctl
complete -F _tandemd tandemd
