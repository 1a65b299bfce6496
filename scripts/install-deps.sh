#!/usr/bin/env bash
# Installs every package mfs needs to build, test and benchmark (Debian 12, as root).
set -euo pipefail
PKGS="build-essential autoconf automake pkg-config uuid-dev libblkid-dev zlib1g-dev
libudev-dev libjson-c-dev libfuse3-dev fuse3 libisal-dev libxxhash-dev libssl-dev
bats bats-assert bats-support e2fsprogs btrfs-progs util-linux fdisk xxd bc acl
python3-docutils python3-jsonschema man-db bash-completion udev clang libclang-rt-14-dev"
missing=""
for p in $PKGS; do
	dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq $missing >/dev/null
fi
echo "dependencies installed"
