# complete.bash COMPLETION_FILE LINE: the completions bash offers with the
# cursor at the end of LINE, one a line, sorted. COMP_WORDS is split as
# readline splits it (blanks separate words, a run of COMP_WORDBREAKS
# characters such as '=' is a word of its own), then the function the
# completion file registered for the command is called as bash calls it.
# Used by completion.bats.
. /usr/share/bash-completion/bash_completion
. "$1"
line=$2
mapfile -t COMP_WORDS < <(python3 - "$line" "$COMP_WORDBREAKS" <<'PY'
import sys
line, breaks = sys.argv[1], sys.argv[2]
words, cur, kind = [], "", None
for ch in line:
    if ch in " \t\n":
        if cur:
            words.append(cur)
        cur, kind = "", None
        continue
    k = "break" if ch in breaks else "word"
    if cur and k != kind:
        words.append(cur)
        cur = ""
    cur, kind = cur + ch, k
words.append(cur)
print("\n".join(words))
PY
)
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE=$line
COMP_POINT=${#line}
fn=$(complete -p "${COMP_WORDS[0]##*/}" | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
[ -n "$fn" ] || { echo "no completion registered for ${COMP_WORDS[0]}" >&2; exit 1; }
COMPREPLY=()
"$fn" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
((${#COMPREPLY[@]})) && printf '%s\n' "${COMPREPLY[@]}" | sort -u
exit 0
