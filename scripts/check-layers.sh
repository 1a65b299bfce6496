#!/usr/bin/env bash
# The engine's layers (Documentation/architecture.md), lowest first. A file
# may include headers of its own layer and of the layers below it, never of
# one above, and nothing of the tools (cmds/, common/, fuse/, mkfs/). Prints
# each include that breaks the rule; exits 1 if there is one.
#
#   check-layers.sh [TOP]	(TOP: the source tree, by default this one)
#
# scripts/layer-exceptions lists the upward includes not yet turned round
# ("FILE HEADER" per line); the list may only shrink: an exception that no
# longer occurs is an error too, so it is deleted when its include goes.
set -u
top=${1:-$(dirname "$0")/..}
cd "$top" || exit 2
exceptions=scripts/layer-exceptions
declare -A allowed=() seen=()
if [ -f "$exceptions" ]; then
	while read -r file header; do
		case $file in ''|'#'*) continue ;; esac
		allowed["$file $header"]=1
	done < "$exceptions"
fi
layers="format block volumes tree fs ops"
rank() {
	local i=0 l
	for l in $layers; do
		[ "$l" = "$1" ] && { echo $i; return; }
		i=$((i + 1))
	done
	echo -1
}
bad=0
for f in kernel-shared/*; do
	[ -d "$f" ] && continue
	echo "$f: outside the layer folders"
	bad=1
done
for f in kernel-shared/*/*.[ch]; do
	layer=${f#kernel-shared/}
	layer=${layer%%/*}
	own=$(rank "$layer")
	if [ "$own" -lt 0 ]; then
		echo "$f: '$layer' is not a layer ($layers)"
		bad=1
		continue
	fi
	while IFS=: read -r line inc; do
		case $inc in
		kernel-shared/*/*)
			to=${inc#kernel-shared/}
			to=${to%%/*}
			if [ "$(rank "$to")" -gt "$own" ] || [ "$(rank "$to")" -lt 0 ]; then
				if [ -n "${allowed["$f $inc"]:-}" ]; then
					seen["$f $inc"]=1
					continue
				fi
				echo "$f:$line: includes $inc: $to is above $layer"
				bad=1
			fi ;;
		*/*)
			echo "$f:$line: includes $inc: the engine uses no tool code"
			bad=1 ;;
		*)
			echo "$f:$line: includes \"$inc\": name headers from the top (kernel-shared/LAYER/...)"
			bad=1 ;;
		esac
	done < <(grep -n '^#include "' "$f" | sed 's/^\([0-9]*\):#include "\([^"]*\)".*/\1:\2/')
done
for e in "${!allowed[@]}"; do
	[ -n "${seen[$e]:-}" ] && continue
	echo "$exceptions: '$e' no longer occurs: delete the line"
	bad=1
done
exit $bad
