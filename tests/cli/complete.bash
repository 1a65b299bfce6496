# complete.bash COMPLETION_FILE LINE: the completions bash offers with the
# cursor at the end of LINE, one a line, sorted. COMP_WORDS is split as
# readline splits it (blanks separate words, a run of COMP_WORDBREAKS
# characters such as '=' is a word of its own), then the function the
# completion file registered for the command is called as bash calls it.
# Used by completion.bats.
. /usr/share/bash-completion/bash_completion
. "$1"
line=$2
COMP_WORDS=()
cur="" kind=""
for ((i = 0; i < ${#line}; i++)); do
	ch=${line:i:1}
	if [[ $ch == [$' \t\n'] ]]; then
		[ -n "$cur" ] && COMP_WORDS+=("$cur")
		cur="" kind=""
		continue
	fi
	if [[ $COMP_WORDBREAKS == *"$ch"* ]]; then k=break; else k=word; fi
	if [ -n "$cur" ] && [ "$k" != "$kind" ]; then
		COMP_WORDS+=("$cur")
		cur=""
	fi
	cur+=$ch
	kind=$k
done
COMP_WORDS+=("$cur")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE=$line
COMP_POINT=${#line}
fn=$(complete -p "${COMP_WORDS[0]##*/}" | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
[ -n "$fn" ] || { echo "no completion registered for ${COMP_WORDS[0]}" >&2; exit 1; }
COMPREPLY=()
"$fn" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
((${#COMPREPLY[@]})) && printf '%s\n' "${COMPREPLY[@]}" | sort -u
exit 0
