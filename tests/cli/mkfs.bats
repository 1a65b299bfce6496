#!/usr/bin/env bats
# mkfs.mfs / mfs mkfs: options, defaults, summary, and every refusal (which
# must leave the devices and the registry untouched).

load helpers

# profile_line KIND PROFILE: the summary's "Block group profiles" line
profile_re() {
	printf '^  %-18s%-8s +[0-9]+\\.[0-9]{2}[KMG]iB$' "$1:" "$2"
}

ui_name() {
	case $1 in
	single) echo single ;;
	*) echo "$1" | tr '[:lower:]' '[:upper:]' ;;
	esac
}

min_devs() {
	case $1 in
	single | dup | raid0) echo 1 ;;
	raid1 | raid10 | raid5) echo 2 ;;
	raid1c3 | raid6) echo 3 ;;
	raid1c4) echo 4 ;;
	esac
}

@test "mkfs: one device, defaults and summary layout" {
	make_images 1
	run --separate-stderr mkfs.mfs "$T/img1"
	assert_success
	assert_line --index 0 --regexp '^mfs v[0-9]+\.[0-9]+'
	assert_line "See 'man mkfs.mfs' for more information."
	assert_line "Performing full device TRIM $T/img1 (1.00GiB) ..."
	assert_line "Label:              (null)"
	assert_line --regexp '^UUID:               [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
	assert_line "Node size:          16384"
	assert_line --regexp $'^Sector size:        4096\t\\(CPU page size: [0-9]+\\)$'
	assert_line "Filesystem size:    1.00GiB"
	assert_line "Block group profiles:"
	assert_line --regexp "$(profile_re Data single)"
	assert_line --regexp "$(profile_re Metadata DUP)"
	assert_line --regexp "$(profile_re System DUP)"
	assert_line "Features:           none"
	assert_line "Checksum:           crc32c"
	assert_line "Number of devices:  1"
	assert_line "Devices:"
	assert_line "   ID        SIZE  PATH"
	assert_line "    1     1.00GiB  $T/img1"
	assert_stderr_empty
	# the UUID shown is the one written
	uuid=$(sed -n 's/^UUID: *//p' <<<"$output")
	[ "$(fs_uuid "$T/img1")" = "$uuid" ]
	[ "$(super_field "$T/img1" num_devices)" = 1 ]
	# the image is registered
	grep -qxF "$T/img1" "$MFS_REGISTRY"
	run mfs check "$T/img1"
	assert_success
	assert_line --partial "no error found"

	# key order of the summary, and the trailing blank line
	mkfs.mfs -f -K "$T/img1" >"$T/out"
	keys=$(sed -n 's/^\([A-Z][A-Za-z ]*\):.*/\1/p' "$T/out" | tr '\n' ,)
	[ "$keys" = "Label,UUID,Node size,Sector size,Filesystem size,Block group profiles,Features,Checksum,Number of devices,Devices," ]
	[ -z "$(tail -n 1 "$T/out")" ]
}

@test "mkfs: several devices default to data single, metadata RAID1; devices in command-line order" {
	make_images 3
	run --separate-stderr mkfs.mfs $(imgs 3)
	assert_success
	assert_line --regexp "$(profile_re Data single)"
	assert_line --regexp "$(profile_re Metadata RAID1)"
	assert_line --regexp "$(profile_re System RAID1)"
	assert_line "Filesystem size:    3.00GiB"
	assert_line "Number of devices:  3"
	assert_line "    1     1.00GiB  $T/img1"
	assert_line "    2     1.00GiB  $T/img2"
	assert_line "    3     1.00GiB  $T/img3"
	[ "$(count_lines '^Performing full device TRIM ')" -eq 3 ]
	for i in 1 2 3; do
		[ "$(super_field "$T/img$i" dev_item.devid)" = "$i" ]
		[ "$(super_field "$T/img$i" num_devices)" = 3 ]
	done
	run mfs inspect-internal dump-tree -t chunk "$T/img1"
	assert_success
	assert_line --regexp 'type Metadata\|RAID1$'
	assert_line --regexp 'type System\|RAID1$'
	assert_line --regexp 'type Data\|single$'
	run mfs check "$T/img1"
	assert_success
}

@test "mkfs: every profile for data and metadata on its minimum number of devices" {
	make_images 4
	for p in single dup raid0 raid1 raid1c3 raid1c4 raid10 raid5 raid6; do
		n=$(min_devs "$p")
		u=$(ui_name "$p")
		run --separate-stderr mkfs.mfs -f -K -d "$p" -m "$p" $(imgs "$n")
		assert_success
		assert_line --regexp "$(profile_re Data "$u")"
		assert_line --regexp "$(profile_re Metadata "$u")"
		assert_line --regexp "$(profile_re System "$u")"
		assert_line "Number of devices:  $n"
		case $p in
		raid5 | raid6) assert_line "Features:           raid56" ;;
		raid1c3 | raid1c4) assert_line "Features:           raid1c34" ;;
		*) assert_line "Features:           none" ;;
		esac
		run mfs inspect-internal dump-tree -t chunk "$T/img1"
		assert_success
		assert_line --regexp "type Data\\|$u\$"
		assert_line --regexp "type Metadata\\|$u\$"
		assert_line --regexp "type System\\|$u\$"
		run mfs check "$T/img1"
		assert_success
		assert_line --partial "no error found"
	done
}

@test "mkfs: mixed profiles -d raid6 -m raid1c3 on 4 devices, -d raid5 -m raid1 on 3, raid10 on 4" {
	make_images 4
	run --separate-stderr mkfs.mfs -d raid6 -m raid1c3 $(imgs 4)
	assert_success
	assert_line --regexp "$(profile_re Data RAID6)"
	assert_line --regexp "$(profile_re Metadata RAID1C3)"
	assert_line --regexp "$(profile_re System RAID1C3)"
	assert_line "Features:           raid56, raid1c34"
	run mfs inspect-internal dump-super "$T/img4"
	assert_line $'\t\t\t( RAID56 |'
	assert_line $'\t\t\t  RAID1C34 )'
	run mfs check "$T/img2"
	assert_success

	run --separate-stderr mkfs.mfs -f -d raid5 -m raid1 $(imgs 3)
	assert_success
	assert_line --regexp "$(profile_re Data RAID5)"
	assert_line --regexp "$(profile_re Metadata RAID1)"
	run mfs check "$T/img1"
	assert_success

	run --separate-stderr mkfs.mfs -f -d raid10 -m raid10 $(imgs 4)
	assert_success
	assert_line --regexp "$(profile_re Data RAID10)"
	run mfs inspect-internal dump-tree -t chunk "$T/img1"
	assert_line --regexp 'num_stripes 4 sub_stripes 2$'
	run mfs check "$T/img1"
	assert_success
}

@test "mkfs: profile names are case-insensitive; DUP on several devices warns" {
	make_images 2
	run --separate-stderr mkfs.mfs -d RAID1 -m Dup $(imgs 2)
	assert_success
	assert_line --regexp "$(profile_re Data RAID1)"
	assert_line --regexp "$(profile_re Metadata DUP)"
	assert_stderr_line "WARNING: DUP is not recommended on filesystem with multiple devices"
	assert_stderr_line "WARNING: metadata has lower redundancy than data!"
}

@test "mkfs: -L sets the label shown by filesystem label and filesystem show" {
	make_images 2
	run --separate-stderr mkfs.mfs -L "my data" $(imgs 2)
	assert_success
	assert_line "Label:              my data"
	run mfs filesystem label "$T/img2"
	assert_success
	assert_output "my data"
	run mfs filesystem show "$T/img1"
	assert_success
	assert_line --regexp "^Label: 'my data'  uuid: [0-9a-f-]{36}$"
	run mfs filesystem show "my data"
	assert_success
	assert_line --partial "path $T/img2"
}

@test "mkfs: -L longer than 255 bytes is refused, 255 accepted" {
	make_images 1
	seed_image "$T/img1"
	fp=$(fingerprint "$T/img1")
	long=$(printf 'x%.0s' $(seq 256))
	run mkfs.mfs -L "$long" "$T/img1"
	assert_failure 1
	assert_output "ERROR: label $long is too long (max 255)"
	assert_untouched "$T/img1" "$fp"
	assert_no_registry
	run mkfs.mfs -q -f -L "${long:1}" "$T/img1"
	assert_success
	run mfs filesystem label "$T/img1"
	assert_output "${long:1}"
}

@test "mkfs: -U sets the UUID; a duplicate -U is refused; garbage -U is refused" {
	make_images 2
	u=$(cat /proc/sys/kernel/random/uuid)
	run --separate-stderr mkfs.mfs -U "$u" "$T/img1"
	assert_success
	assert_line "UUID:               $u"
	[ "$(fs_uuid "$T/img1")" = "$u" ]
	run mfs filesystem show "$u"
	assert_success
	assert_line "Label: none  uuid: $u"

	seed_image "$T/img2"
	fp=$(fingerprint "$T/img2")
	reg=$(cat "$MFS_REGISTRY")
	run mkfs.mfs -U "$u" "$T/img2"
	assert_failure 1
	assert_output "ERROR: non-unique UUID: $u (in use by $T/img1)"
	assert_untouched "$T/img2" "$fp"
	[ "$(cat "$MFS_REGISTRY")" = "$reg" ]

	# re-making the filesystem that owns the UUID is fine
	run mkfs.mfs -q -f -U "$u" "$T/img1"
	assert_success

	run mkfs.mfs -U not-a-uuid "$T/img2"
	assert_failure 1
	assert_output "ERROR: could not parse UUID: not-a-uuid"
	assert_untouched "$T/img2" "$fp"
}

@test "mkfs: -n 4096 and -n 65536 work; invalid node sizes are refused" {
	make_images 1
	for n in 4096 65536 64k; do
		run --separate-stderr mkfs.mfs -f -K -n "$n" "$T/img1"
		assert_success
		want=$n
		[ "$n" = 64k ] && want=65536
		assert_line "Node size:          $want"
		[ "$(super_field "$T/img1" nodesize)" = "$want" ]
		run mfs inspect-internal dump-tree -t extent "$T/img1"
		assert_success
		run mfs check "$T/img1"
		assert_success
		assert_line "total tree bytes: $((6 * want))"
	done
	rm -f "$MFS_REGISTRY"
	seed_image "$T/img1"
	fp=$(fingerprint "$T/img1")
	for n in 8000 2048 131072 0; do
		run mkfs.mfs -f -n "$n" "$T/img1"
		assert_failure 1
		assert_output "ERROR: invalid nodesize $n: must be a power of 2 between 4096 and 65536"
	done
	run mkfs.mfs -f -n banana "$T/img1"
	assert_failure 1
	assert_output "ERROR: invalid nodesize: banana"
	assert_untouched "$T/img1" "$fp"
	assert_no_registry
}

@test "mkfs: sector size other than 4096 is refused" {
	make_images 1
	seed_image "$T/img1"
	fp=$(fingerprint "$T/img1")
	for s in 8192 512 65536; do
		run mkfs.mfs -f -s "$s" "$T/img1"
		assert_failure 1
		assert_output "ERROR: sectorsize $s is not supported (only 4096)"
	done
	assert_untouched "$T/img1" "$fp"
	assert_no_registry
	run mkfs.mfs -q -f -s 4096 "$T/img1"
	assert_success
	[ "$(super_field "$T/img1" sectorsize)" = 4096 ]
}

@test "mkfs: -b limits the size used on each device; larger than the device is refused" {
	make_images 2
	run --separate-stderr mkfs.mfs -b 512M $(imgs 2)
	assert_success
	assert_line "Filesystem size:    1.00GiB"
	assert_line "    1   512.00MiB  $T/img1"
	assert_line "    2   512.00MiB  $T/img2"
	[ "$(super_field "$T/img2" dev_item.total_bytes)" = $((512 * MiB)) ]
	[ "$(super_field "$T/img1" total_bytes)" = $((1024 * MiB)) ]
	run mfs filesystem show "$T/img1"
	assert_line --regexp $'^\tdevid    1 size 512.00MiB used .* path '"$T/img1\$"
	run mfs check "$T/img1"
	assert_success

	rm -f "$MFS_REGISTRY"
	make_images 2
	seed_image "$T/img1"
	seed_image "$T/img2"
	fp1=$(fingerprint "$T/img1")
	fp2=$(fingerprint "$T/img2")
	run mkfs.mfs -b 2G $(imgs 2)
	assert_failure 1
	assert_output "ERROR: $T/img1 is smaller than requested size, expected $((2 * GiB)), found $GiB"
	assert_untouched "$T/img1" "$fp1"
	assert_untouched "$T/img2" "$fp2"
	assert_no_registry
}

@test "mkfs: --csum crc32c/xxhash/sha256/blake2 give a clean filesystem and the right csum_type" {
	make_images 2
	while read -r arg type name size; do
		run --separate-stderr mkfs.mfs -f -K --csum "$arg" $(imgs 2)
		assert_success
		assert_line "Checksum:           $name"
		run mfs inspect-internal dump-super "$T/img2"
		assert_success
		assert_line "$(printf 'csum_type\t\t%s (%s)' "$type" "$name")"
		assert_line "$(printf 'csum_size\t\t%s' "$size")"
		assert_line --regexp $'^csum\t\t\t0x[0-9a-f]{'"$((size * 2))"'} \[match\]$'
		run mfs check "$T/img1"
		assert_success
		assert_line --partial "no error found"
	done <<-'EOF'
		crc32c 0 crc32c 4
		xxhash 1 xxhash64 8
		sha256 2 sha256 32
		blake2 3 blake2b 32
	EOF
	run mkfs.mfs -q -f --checksum sha256 "$T/img1"
	assert_success
	[ "$(super_field "$T/img1" csum_type)" = "2 (sha256)" ]
	rm -f "$MFS_REGISTRY"
	seed_image "$T/img1"
	fp=$(fingerprint "$T/img1")
	run mkfs.mfs -f --csum md5 "$T/img1"
	assert_failure 1
	assert_output "ERROR: unknown checksum type md5 (valid: crc32c, xxhash, sha256, blake2)"
	assert_untouched "$T/img1" "$fp"
	assert_no_registry
}

# run_without_libcrypto CMD...: CMD with libcrypto.so.3 unloadable (a mount
# namespace of its own, /dev/null bound over the library)
run_without_libcrypto() {
	run unshare -m sh -c 'mount --bind /dev/null "$0" && exec "$@"' "$crypto_lib" "$@"
}

@test "mkfs: sha256 and blake2 load libcrypto when used; without it mkfs and open refuse" {
	crypto_lib=$(ldconfig -p | awk '$1 == "libcrypto.so.3" { print $NF; exit }')
	[ -n "$crypto_lib" ] || skip "libcrypto.so.3 is not installed"
	make_images 2
	run mkfs.mfs -q -f --csum sha256 "$T/img1"
	assert_success
	# the default needs no libcrypto: mkfs, mount and check go on without it
	run_without_libcrypto mkfs.mfs -q -f "$T/img2"
	assert_success
	run_without_libcrypto mfs check "$T/img2"
	assert_success
	seed_image "$T/img2"
	fp=$(fingerprint "$T/img2")
	run_without_libcrypto mkfs.mfs -f --csum blake2 "$T/img2"
	assert_failure 1
	assert_output "ERROR: checksum blake2b needs OpenSSL's libcrypto (libcrypto.so.3), which cannot be loaded"
	assert_untouched "$T/img2" "$fp"
	# a sha256 filesystem is not taken for a damaged one
	run_without_libcrypto mfs check "$T/img1"
	assert_failure 1
	assert_output --partial "ERROR: filesystem on $T/img1 uses a checksum (sha256 or blake2) that needs OpenSSL's libcrypto"
	refute_output --partial "damaged"
	run mfs check "$T/img1"
	assert_success
}

# set_unknown_incompat IMG: incompat bit 62 in each superblock copy of IMG
# that is there, its crc32c checksum recomputed (a future version's feature)
set_unknown_incompat() {
	python3 - "$1" <<-'PY'
		import os, struct, sys
		t = []
		for n in range(256):
		    c = n
		    for _ in range(8):
		        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
		    t.append(c)
		def crc32c(b):
		    c = 0xFFFFFFFF
		    for x in b:
		        c = t[(c ^ x) & 0xFF] ^ (c >> 8)
		    return c ^ 0xFFFFFFFF
		fd = os.open(sys.argv[1], os.O_RDWR)
		for off in (65536, 67108864):
		    sb = bytearray(os.pread(fd, 4096, off))
		    if len(sb) < 4096 or sb[64:72] != b"_MFS_v1!":
		        continue
		    flags = struct.unpack_from("<Q", sb, 128)[0] | (1 << 62)
		    struct.pack_into("<Q", sb, 128, flags)
		    struct.pack_into("<I", sb, 0, crc32c(bytes(sb[32:])))
		    os.pwrite(fd, bytes(sb), off)
		os.close(fd)
	PY
}

@test "open: a superblock with a feature bit this version does not know is refused as such, not as damage" {
	make_images 1
	mkfs.mfs -q -f "$T/img1"
	set_unknown_incompat "$T/img1"
	run mfs check "$T/img1"
	assert_failure 1
	assert_output --partial "ERROR: filesystem on $T/img1 uses features this version does not support"
	refute_output --partial "damaged"
	mkdir -p "$T/mnt"
	run mfs mount "$T/img1" "$T/mnt" 3>&-
	assert_failure
	assert_output --partial "uses features this version does not support"
}

@test "mkfs: -O list-all lists the features; an unknown feature is refused" {
	run --separate-stderr mkfs.mfs -O list-all
	assert_success
	assert_line "Filesystem features available:"
	assert_line --regexp '^raid56 +- '
	assert_line --regexp '^raid1c34 +- '
	make_images 1
	seed_image "$T/img1"
	fp=$(fingerprint "$T/img1")
	run mkfs.mfs -O bogus "$T/img1"
	assert_failure 1
	assert_output "ERROR: unknown feature: bogus (see -O list-all)"
	assert_untouched "$T/img1" "$fp"
	assert_no_registry
	run --separate-stderr mkfs.mfs -f -O raid56 "$T/img1"
	assert_success
	assert_line "Features:           raid56"
}

@test "mkfs: -q prints nothing, -V prints the version" {
	make_images 2
	run --separate-stderr mkfs.mfs -q $(imgs 2)
	assert_success
	assert_stdout_empty
	assert_stderr_empty
	[ "$(super_field "$T/img2" num_devices)" = 2 ]
	run --separate-stderr mkfs.mfs --quiet -f -d dup -m dup "$T/img1"
	assert_success
	assert_stdout_empty

	for v in -V --version; do
		run --separate-stderr mkfs.mfs "$v"
		assert_success
		assert_output --regexp '^mkfs\.mfs, part of mfs v[0-9]+\.[0-9]+'
	done
	run --separate-stderr mfs mkfs -V
	assert_success
	assert_output --regexp '^mkfs\.mfs, part of mfs v[0-9]+\.[0-9]+'
}

@test "mkfs: default TRIM punches old data out of an image; -K keeps it and prints no TRIM line" {
	make_images 2
	for i in 1 2; do
		dd if=/dev/urandom of="$T/img$i" bs=1M seek=500 count=4 conv=notrunc status=none
	done
	before=$(dd if="$T/img2" bs=1M skip=500 count=4 status=none | md5sum)

	run --separate-stderr mkfs.mfs "$T/img1"
	assert_success
	assert_line "Performing full device TRIM $T/img1 (1.00GiB) ..."
	nonzero=$(dd if="$T/img1" bs=1M skip=500 count=4 status=none | tr -d '\0' | wc -c)
	[ "$nonzero" -eq 0 ]
	# only the metadata mkfs wrote is allocated now
	[ "$(du -k "$T/img1" | cut -f1)" -lt 4096 ]

	run --separate-stderr mkfs.mfs -K "$T/img2"
	assert_success
	refute_line --partial "TRIM"
	[ "$(dd if="$T/img2" bs=1M skip=500 count=4 status=none | md5sum)" = "$before" ]
	[ "$(du -k "$T/img2" | cut -f1)" -ge 4096 ]
	run --separate-stderr mkfs.mfs -f --nodiscard "$T/img2"
	refute_line --partial "TRIM"
}

@test "mkfs: 'mfs mkfs' is the same command" {
	make_images 2
	run --separate-stderr mfs mkfs -L viamfs -m raid1 $(imgs 2)
	assert_success
	assert_line "Label:              viamfs"
	assert_line --regexp "$(profile_re Metadata RAID1)"
	run mfs check "$T/img1"
	assert_success
}

@test "mkfs: a 300G sparse image gets all three superblock copies" {
	truncate -s 300G "$T/big"
	run --separate-stderr mkfs.mfs -q -K "$T/big"
	assert_success
	run mfs inspect-internal dump-super -a "$T/big"
	assert_success
	assert_line "superblock: bytenr=65536, device=$T/big"
	assert_line "superblock: bytenr=67108864, device=$T/big"
	assert_line "superblock: bytenr=274877906944, device=$T/big"
	run mfs check "$T/big"
	assert_success
}

# ---------------- refusals: nothing may be written ----------------

@test "mkfs refuses: unknown data or metadata profile" {
	make_images 1
	seed_image "$T/img1"
	fp=$(fingerprint "$T/img1")
	run mkfs.mfs -d raid7 "$T/img1"
	assert_failure 1
	assert_output "ERROR: unknown data profile 'raid7' (valid: single, dup, raid0, raid1, raid1c3, raid1c4, raid10, raid5, raid6)"
	run mkfs.mfs -m mirror "$T/img1"
	assert_failure 1
	assert_output "ERROR: unknown metadata profile 'mirror' (valid: single, dup, raid0, raid1, raid1c3, raid1c4, raid10, raid5, raid6)"
	assert_untouched "$T/img1" "$fp"
	assert_no_registry
}

@test "mkfs refuses: too few devices for raid1/raid1c3/raid1c4/raid5/raid6/raid10" {
	make_images 3
	for i in 1 2 3; do seed_image "$T/img$i"; done
	fp1=$(fingerprint "$T/img1")
	fp2=$(fingerprint "$T/img2")
	fp3=$(fingerprint "$T/img3")
	while read -r p u need have; do
		run mkfs.mfs -d "$p" $(imgs "$have")
		assert_failure 1
		assert_output "ERROR: unable to create FS with data profile $u (have $have devices but $need devices are required)"
		run mkfs.mfs -m "$p" $(imgs "$have")
		assert_failure 1
		assert_output "ERROR: unable to create FS with metadata profile $u (have $have devices but $need devices are required)"
	done <<-'EOF'
		raid1 RAID1 2 1
		raid1c3 RAID1C3 3 2
		raid1c4 RAID1C4 4 3
		raid5 RAID5 2 1
		raid6 RAID6 3 2
		raid10 RAID10 2 1
	EOF
	# metadata defaults to RAID1 only with several devices: one device is fine
	run mkfs.mfs -m raid1 "$T/img1"
	assert_failure 1
	assert_output "ERROR: unable to create FS with metadata profile RAID1 (have 1 devices but 2 devices are required)"
	assert_untouched "$T/img1" "$fp1"
	assert_untouched "$T/img2" "$fp2"
	assert_untouched "$T/img3" "$fp3"
	assert_no_registry
}

@test "mkfs refuses: a device holding ext4, which stays intact" {
	make_images 2
	mkfs.ext4 -q -F -L extlabel "$T/img2"
	echo "precious content" >"$T/src"
	debugfs -w -R "write $T/src /file" "$T/img2" >/dev/null 2>&1
	ext_uuid=$(dumpe2fs -h "$T/img2" 2>/dev/null | sed -n 's/^Filesystem UUID: *//p')
	[ -n "$ext_uuid" ]
	seed_image "$T/img1"
	fp1=$(fingerprint "$T/img1")
	fp2=$(fingerprint "$T/img2")

	run mkfs.mfs $(imgs 2)
	assert_failure 1
	assert_line "ERROR: $T/img2 appears to contain an existing filesystem (type=ext4, label=extlabel)"
	assert_line "ERROR: use the -f option to force overwrite of $T/img2"
	[ "${#lines[@]}" -eq 2 ]
	assert_untouched "$T/img1" "$fp1"
	assert_untouched "$T/img2" "$fp2"
	assert_no_registry
	run e2fsck -fn "$T/img2"
	assert_success
	[ "$(dumpe2fs -h "$T/img2" 2>/dev/null | sed -n 's/^Filesystem UUID: *//p')" = "$ext_uuid" ]
	[ "$(debugfs -R 'cat /file' "$T/img2" 2>/dev/null)" = "precious content" ]

	# with -f it is overwritten
	run mkfs.mfs -q -f $(imgs 2)
	assert_success
	[ "$(super_field "$T/img2" dev_item.devid)" = 2 ]
}

@test "mkfs refuses: a GPT partition table" {
	command -v sfdisk >/dev/null || fail "sfdisk missing (package fdisk, see scripts/install-deps.sh)"
	make_images 1
	echo 'label: gpt' | sfdisk -q "$T/img1"
	fp=$(fingerprint "$T/img1")
	run mkfs.mfs "$T/img1"
	assert_failure 1
	assert_line "ERROR: $T/img1 appears to contain a partition table (gpt)"
	assert_line "ERROR: use the -f option to force overwrite of $T/img1"
	assert_untouched "$T/img1" "$fp"
	assert_no_registry
	run sfdisk -d "$T/img1"
	assert_success
	assert_line "label: gpt"
	run mkfs.mfs -q -f "$T/img1"
	assert_success
	run mfs check "$T/img1"
	assert_success
}

@test "mkfs refuses: an existing mfs filesystem without -f; -f overwrites it" {
	make_images 2
	mkfs.mfs -q -L first $(imgs 2)
	old=$(fs_uuid "$T/img1")
	fp1=$(fingerprint "$T/img1")
	fp2=$(fingerprint "$T/img2")
	reg=$(cat "$MFS_REGISTRY")
	run mkfs.mfs "$T/img2"
	assert_failure 1
	assert_output "ERROR: $T/img2 appears to contain an existing filesystem (type=mfs)
ERROR: use the -f option to force overwrite of $T/img2"
	assert_untouched "$T/img1" "$fp1"
	assert_untouched "$T/img2" "$fp2"
	[ "$(cat "$MFS_REGISTRY")" = "$reg" ]
	run mfs check "$T/img1"
	assert_success

	run --separate-stderr mkfs.mfs -f -L second "$T/img2"
	assert_success
	new=$(fs_uuid "$T/img2")
	[ "$new" != "$old" ]
	run mfs filesystem label "$T/img2"
	assert_output second
}

@test "mkfs refuses: the same device twice, also through a symlink" {
	make_images 2
	seed_image "$T/img1"
	fp=$(fingerprint "$T/img1")
	run mkfs.mfs -m raid1 "$T/img1" "$T/img1"
	assert_failure 1
	assert_output "ERROR: device $T/img1 is listed more than once (as $T/img1)"
	ln -s "$T/img1" "$T/link"
	run mkfs.mfs "$T/img1" "$T/img2" "$T/link"
	assert_failure 1
	assert_output "ERROR: device $T/link is listed more than once (as $T/img1)"
	assert_untouched "$T/img1" "$fp"
	assert_no_registry
}

@test "mkfs refuses: a device below the minimum size" {
	make_images 1
	truncate -s 100M "$T/small"
	seed_image "$T/img1"
	seed_image "$T/small"
	fp=$(fingerprint "$T/img1")
	fps=$(fingerprint "$T/small")
	run mkfs.mfs "$T/img1" "$T/small"
	assert_failure 1
	assert_output "ERROR: '$T/small' is too small to make a usable filesystem (100.00MiB)
ERROR: minimum size for each mfs device is 134217728 (128.00MiB)"
	assert_untouched "$T/img1" "$fp"
	assert_untouched "$T/small" "$fps"
	assert_no_registry
	# -b below the minimum too
	run mkfs.mfs -b 64M "$T/img1"
	assert_failure 1
	assert_line "ERROR: minimum size for each mfs device is 134217728 (128.00MiB)"
	assert_untouched "$T/img1" "$fp"
}

@test "mkfs refuses: a mounted device (loop device and its backing image), even with -f" {
	make_images 2
	mkfs.ext4 -q -F "$T/img1"
	loop=$(make_loop "$T/img1")
	mount_dev "$loop" "$T/mnt"
	seed_image "$T/img2"
	fp2=$(fingerprint "$T/img2")
	run mkfs.mfs -f "$loop"
	assert_failure 1
	assert_output "ERROR: $loop is mounted on $T/mnt"
	run mkfs.mfs -f "$T/img2" "$T/img1"
	assert_failure 1
	assert_output "ERROR: $T/img1 is mounted on $T/mnt"
	assert_untouched "$T/img2" "$fp2"
	assert_no_registry
	umount "$T/mnt"
	run mfs inspect-internal dump-super "$T/img1"
	assert_failure
	run e2fsck -fn "$T/img1"
	assert_success
}

@test "mkfs refuses: a busy image (flock) and a busy block device (O_EXCL)" {
	make_images 2
	seed_image "$T/img1"
	fp=$(fingerprint "$T/img1")
	hold_flock "$T/img1"
	run mkfs.mfs -f "$T/img1"
	assert_failure 1
	assert_output "ERROR: unable to open $T/img1: Device or resource busy"
	assert_untouched "$T/img1" "$fp"

	seed_image "$T/img2"
	fpl=$(fingerprint "$T/img2")
	loop=$(make_loop "$T/img2")
	hold_excl "$loop"
	run mkfs.mfs -f "$loop"
	assert_failure 1
	assert_output "ERROR: unable to open $loop: Device or resource busy"
	assert_untouched "$T/img2" "$fpl"
	assert_no_registry
}

@test "mkfs refuses: a nonexistent path, a directory, no device at all" {
	make_images 1
	seed_image "$T/img1"
	fp=$(fingerprint "$T/img1")
	run mkfs.mfs "$T/img1" "$T/nope"
	assert_failure 1
	assert_output "ERROR: cannot access '$T/nope': No such file or directory"
	mkdir "$T/dir"
	run mkfs.mfs "$T/dir"
	assert_failure 1
	assert_output "ERROR: $T/dir is neither a block device nor a regular file"
	run --separate-stderr mkfs.mfs
	assert_failure 1
	assert_stderr_line "ERROR: no device specified"
	assert_stderr_regex '^usage: mkfs\.mfs '
	assert_untouched "$T/img1" "$fp"
	assert_no_registry
	[ ! -e "$T/nope" ]
}

@test "mkfs: on loop devices; the summary lists the block devices" {
	make_images 2
	l1=$(make_loop "$T/img1")
	l2=$(make_loop "$T/img2")
	run --separate-stderr mkfs.mfs -m raid1 -d raid1 "$l1" "$l2"
	assert_success
	assert_line "    1     1.00GiB  $l1"
	assert_line "    2     1.00GiB  $l2"
	assert_line "Performing full device TRIM $l1 (1.00GiB) ..."
	rm -f "$MFS_REGISTRY"
	run mfs check "$l1"
	assert_success
	assert_line --partial "no error found"
}
