#!/usr/bin/env bats
# The engine's layers (scripts/check-layers.sh, Documentation/architecture.md):
# the tree as it is keeps them, and the checker catches each kind of break,
# on a copy of the tree with one break put in.

load helpers

setup() {
	SRC=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
	T=$(mktemp -d "${BATS_TEST_TMPDIR:-$BATS_TMPDIR}/w.XXXXXX")
	mkdir -p "$T/scripts"
	cp "$SRC/scripts/check-layers.sh" "$T/scripts/"
	[ ! -f "$SRC/scripts/layer-exceptions" ] || cp "$SRC/scripts/layer-exceptions" "$T/scripts/"
	cp -r "$SRC/kernel-shared" "$T/"
}

teardown() {
	rm -rf "$T"
}

@test "layers: every engine include is of its own layer or one below" {
	run "$SRC/scripts/check-layers.sh" "$SRC"
	assert_success
	assert_output ""
}

@test "layers: an include from a higher layer is refused" {
	sed -i '0,/^#include "/s|^#include "|#include "kernel-shared/ops/restripe.h"\n&|' \
		"$T/kernel-shared/block/csum.c"
	run "$T/scripts/check-layers.sh" "$T"
	assert_failure
	assert_output --partial "kernel-shared/block/csum.c:"
	assert_output --partial "ops is above block"
}

@test "layers: tool headers, bare names and files outside the folders are refused" {
	sed -i '0,/^#include "/s|^#include "|#include "common/messages.h"\n#include "io.h"\n&|' \
		"$T/kernel-shared/block/csum.c"
	touch "$T/kernel-shared/stray.c"
	run "$T/scripts/check-layers.sh" "$T"
	assert_failure
	assert_output --partial "includes common/messages.h: the engine uses no tool code"
	assert_output --partial "name headers from the top"
	assert_output --partial "kernel-shared/stray.c: outside the layer folders"
}

@test "layers: an exception whose include is gone must be deleted from the list" {
	echo "kernel-shared/block/csum.c kernel-shared/ops/restripe.h" >> "$T/scripts/layer-exceptions"
	run "$T/scripts/check-layers.sh" "$T"
	assert_failure
	assert_output --partial "no longer occurs: delete the line"
}
