# What every crash driver shares (sourced): TAP lines, the run mode, which
# crash points a run replays and how many reorderings each gets, and the
# facts a write log gives about its run. The caller sets top (the source
# tree) and calls crash_setup.
#
# MFS_CRASH_MODE=full replays every crash point of every log (make
# crash-test); the default, sampled, replays a seeded random sample of
# them, one in each commit's stretch of the log at least, so the suite's
# cost stays bounded. MFS_CRASH_REORDERS sets how many random in-flight reorderings
# each replayed point gets (full: 4, sampled: 1); MFS_CRASH_SEED changes
# the sample and the reorderings.

CRASH_MODE=${MFS_CRASH_MODE:-sampled}
case $CRASH_MODE in
full) REORDERS=${MFS_CRASH_REORDERS:-4} ;;
sampled) REORDERS=${MFS_CRASH_REORDERS:-1} ;;
*)
	echo "not ok 1 - MFS_CRASH_MODE is '$CRASH_MODE', not full or sampled"
	echo "1..1"
	exit 1 ;;
esac
CRASH_SEED=${MFS_CRASH_SEED:-0}
# the system's python: a version manager's shim in PATH can take a second a start
python=/usr/bin/python3
[ -x "$python" ] || python=python3

# crash_setup NAME: the build's programs ($mfs, $mkfs, $replay; MFS_BUILD
# names the build, build/ by default), a temporary folder $tmp with $tmp/mnt
# and a device registry of its own (only the images named here), removed on
# exit with whatever is still mounted at $tmp/mnt or $tmp/vmnt unmounted.
crash_setup() {
	build=${MFS_BUILD:-$top/build}
	mfs=$build/mfs
	mkfs=$build/mkfs.mfs
	replay=$build/tests/crash/replay
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/mfs-crash-$1.XXXXXX")
	export MFS_REGISTRY=$tmp/registry
	mkdir -p "$tmp/mnt"
	trap crash_cleanup EXIT
}

crash_cleanup() {
	local m

	for m in "$tmp/mnt" "$tmp/vmnt"; do
		if mountpoint -q "$m" 2>/dev/null; then
			timeout 60 "$mfs" umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
		fi
	done
	rm -rf "$tmp"
}

tests=0
failures=0
# every state replayed and checked over the run, for crash_summary
states_replayed=0

tap() {	# tap OK|FAIL description
	tests=$((tests + 1))
	if [ "$1" = OK ]; then
		echo "ok $tests - $2"
	else
		failures=$((failures + 1))
		echo "not ok $tests - $2"
	fi
}

# One more state replayed and checked (a driver calls it for each).
state_replayed() {
	states_replayed=$((states_replayed + 1))
}

# The line tests/reliability-report.sh reads, before the TAP plan.
crash_summary() {	# crash_summary DRIVER
	echo "# $1: states replayed: $states_replayed, failures: $failures"
}

# A TAP comment naming the mode, so a log says what was covered.
crash_mode_banner() {	# crash_mode_banner DRIVER [WHAT-SAMPLED-MODE-TAKES]
	if [ "$CRASH_MODE" = full ]; then
		echo "# $1: full mode: every crash point, $REORDERS reorderings each"
	else
		echo "# $1: sampled mode (make crash-test runs the full one): ${2:-"a sample of the crash points, one in each commit's stretch at least, $REORDERS reordering(s) each"}"
	fi
}

# LOG_POINTS, LOG_COMMITS, LOG_UNFLUSHED of a write log (replay --stats),
# and LOG_SUPERS, the generation of the superblock each device holds
# durably at each crash point (replay --points: "K G1 G2 ...").
log_stats() {	# log_stats LOG
	local out
	out=$("$replay" "$1" --stats) || return 1
	LOG_POINTS=$(echo "$out" | awk '{ print $2 }')
	LOG_COMMITS=$(echo "$out" | awk '{ print $8 }')
	LOG_UNFLUSHED=$(echo "$out" | awk '{ print $10 }')
	LOG_SUPERS=$("$replay" "$1" --points) || return 1
}

# The crash points inside a commit's superblock writes, "K G": devices
# that get generation G's superblock hold it durably at crash point K,
# others not yet. A device leaves the comparison once it holds the last
# superblock the log gives it (the run removed it, or wiped it). After
# log_stats.
torn_points() {
	awk '{ line[NR] = $0; last = $0 }
	END {
		n = split(last, fin)
		for (r = 1; r < NR; r++) {
			split(line[r], g)
			lo = hi = -1
			for (i = 2; i <= n; i++) {
				if (g[i] > hi)
					hi = g[i]
			}
			for (i = 2; i <= n; i++) {
				if (g[i] == fin[i] && fin[i] < hi)
					continue
				if (lo < 0 || g[i] < lo)
					lo = g[i]
			}
			if (lo >= 0 && lo != hi)
				print g[1], hi
		}
	}' <<<"$LOG_SUPERS"
}

# Whether to run the configuration NAME: MFS_CRASH_ONLY=TEXT runs only
# those whose name holds TEXT (to look into one; the suite runs them all).
wanted() {	# wanted NAME
	[ -z "${MFS_CRASH_ONLY:-}" ] || [[ $1 == *"$MFS_CRASH_ONLY"* ]]
}

# N of the lines on stdin, drawn at random from KEY and the seed.
pick_some() {	# pick_some N KEY
	awk -v seed="$(cksum <<<"$2 $CRASH_SEED" | cut -d' ' -f1)" \
		'BEGIN { srand(seed % 2147483647) } { print rand(), $0 }' |
		sort -n | head -n "$1" | cut -d' ' -f2-
}

# The crash points to replay, ascending: all of 0..COUNT in full mode; else
# 0, COUNT, the points named, one point drawn from each commit's stretch
# of the log (the points where the newest superblock any device holds
# durably is the same: the commit's last superblock writes, then the
# next one's tree and data writes) and more drawn from the others until
# SAMPLE are drawn, all from KEY and the seed. After log_stats, so a run
# checks no fewer states than it made commits.
choose_points() {	# choose_points COUNT SAMPLE KEY [POINT...]
	local count=$1 sample=$2 key=$3 each more
	shift 3
	if [ "$CRASH_MODE" = full ] || [ "$count" -le $((sample + 1)) ]; then
		seq 0 "$count"
		return
	fi
	each=$(awk -v c="$count" '$1 > 0 && $1 < c {
			hi = 0
			for (i = 2; i <= NF; i++)
				if ($i > hi)
					hi = $i
			print $1, hi
		}' <<<"$LOG_SUPERS" | pick_some "$count" "$key stretch" | awk '!seen[$2]++ { print $1 }')
	{
		echo 0
		echo "$count"
		printf '%s\n' "$@"
		echo "$each"
		more=$((sample - $(echo "$each" | grep -c .)))
		[ "$more" -le 0 ] || seq 1 $((count - 1)) | grep -vxF -f <(echo "$each") |
			pick_some "$more" "$key"
	} | awk -v c="$count" '$1 ~ /^[0-9]+$/ && $1 <= c' | sort -n -u
}

# What is wrong with replaying N states of a log whose run made at least
# MIN commits, if anything: a log without them (the run was not logged), or
# fewer states than the log has commits. Prints nothing when all is well.
too_few_states() {	# too_few_states N MIN
	if [ "$LOG_COMMITS" -lt "$2" ]; then
		echo "the log holds $LOG_COMMITS commits, the run made at least $2"
	elif [ "$1" -eq 0 ] || [ "$1" -lt "$LOG_COMMITS" ]; then
		echo "$1 states replayed for a log of $LOG_COMMITS commits"
	fi
}

# Whether the only errors mfs check printed (OUT) name members missing,
# devids matching the regex DEVIDS: a degraded filesystem's clean check.
only_missing_named() {	# only_missing_named OUT DEVIDS
	! grep '^ERROR' <<<"$1" | grep -vqE "^ERROR: device ($2) is missing\$"
}

# The seed of reordering R at point K of configuration KEY.
reorder_seed() {	# reorder_seed KEY K R
	echo $(( $(cksum <<<"$1 $CRASH_SEED" | cut -d' ' -f1) * 1000003 + $2 * 1000 + $3 ))
}
