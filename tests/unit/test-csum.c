/* Unit tests for kernel-shared/block/csum.c: known vectors for every algorithm,
 * the name/size table, and the zero padding of the on-disk field. */
#include <xxhash.h>

#include "kernel-shared/block/csum.h"
#include "unit.h"

static const char check_str[] = "123456789";

static void hex_to_bytes(const char *hex, u8 *out, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned int byte;

		sscanf(hex + 2 * i, "%2x", &byte);
		out[i] = byte;
	}
}

static bool tail_is_zero(const u8 *csum, int from)
{
	int i;

	for (i = from; i < MFS_CSUM_SIZE; i++)
		if (csum[i])
			return false;
	return true;
}

static void test_crc32c_vector(void)
{
	u8 out[MFS_CSUM_SIZE];

	CHECK_EQ(mfs_crc32c(0, check_str, 9), 0xE3069283u);
	CHECK_EQ(mfs_crc32c(0, "", 0), 0);
	memset(out, 0xaa, sizeof(out));
	REQUIRE(mfs_csum_compute(MFS_CSUM_CRC32C, check_str, 9, out) == 0);
	/* Little-endian on disk. */
	CHECK_EQ(out[0], 0x83);
	CHECK_EQ(out[1], 0x92);
	CHECK_EQ(out[2], 0x06);
	CHECK_EQ(out[3], 0xE3);
	CHECK(tail_is_zero(out, 4));
}

/* A result fed back as the seed continues the same CRC stream. */
static void test_crc32c_chaining(void)
{
	u32 part = mfs_crc32c(0, check_str, 4);

	CHECK_EQ(mfs_crc32c(part, check_str + 4, 5), 0xE3069283u);
}

static void test_xxhash_vectors(void)
{
	u8 out[MFS_CSUM_SIZE];
	mfs_le64 le;

	REQUIRE(mfs_csum_compute(MFS_CSUM_XXHASH, "", 0, out) == 0);
	memcpy(&le, out, sizeof(le));
	CHECK(le64_to_cpu(le) == 0xEF46DB3751D8E999ULL);
	CHECK_EQ(out[0], 0x99);
	CHECK(tail_is_zero(out, 8));

	REQUIRE(mfs_csum_compute(MFS_CSUM_XXHASH, "abc", 3, out) == 0);
	memcpy(&le, out, sizeof(le));
	CHECK(le64_to_cpu(le) == XXH64("abc", 3, 0));
	CHECK(le64_to_cpu(le) == 0x44BC2CF5AD770999ULL);
	CHECK(tail_is_zero(out, 8));
}

static void test_sha256_vector(void)
{
	u8 out[MFS_CSUM_SIZE], want[MFS_CSUM_SIZE];

	hex_to_bytes("ba7816bf8f01cfea414140de5dae2223"
		     "b00361a396177a9cb410ff61f20015ad", want, sizeof(want));
	REQUIRE(mfs_csum_compute(MFS_CSUM_SHA256, "abc", 3, out) == 0);
	CHECK(!memcmp(out, want, sizeof(want)));
}

static void test_blake2_vector(void)
{
	u8 out[MFS_CSUM_SIZE], want[MFS_CSUM_SIZE];

	/* First half of BLAKE2b-512("abc"). */
	hex_to_bytes("ba80a53f981c4d0d6a2797b69f12f6e9"
		     "4c212f14685ac4b74b12bb6fdbffa2d1", want, sizeof(want));
	REQUIRE(mfs_csum_compute(MFS_CSUM_BLAKE2, "abc", 3, out) == 0);
	CHECK(!memcmp(out, want, sizeof(want)));
}

static void test_sizes_and_names(void)
{
	static const struct {
		int type;
		int size;
		const char *name;
	} table[] = {
		{ MFS_CSUM_CRC32C, 4, "crc32c" },
		{ MFS_CSUM_XXHASH, 8, "xxhash64" },
		{ MFS_CSUM_SHA256, 32, "sha256" },
		{ MFS_CSUM_BLAKE2, 32, "blake2b" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(table); i++) {
		const char *name = mfs_csum_name(table[i].type);

		CHECK_EQ(mfs_csum_size(table[i].type), table[i].size);
		REQUIRE(name != NULL);
		CHECK(!strcmp(name, table[i].name));
		CHECK_EQ(mfs_csum_parse(name), table[i].type);
		CHECK(mfs_csum_size(table[i].type) <= MFS_CSUM_SIZE);
	}
	CHECK_EQ(mfs_csum_size(4), -EINVAL);
	CHECK_EQ(mfs_csum_size(-1), -EINVAL);
	CHECK(mfs_csum_name(4) == NULL);
	CHECK(mfs_csum_name(-1) == NULL);
}

static void test_parse(void)
{
	CHECK_EQ(mfs_csum_parse("crc32c"), MFS_CSUM_CRC32C);
	CHECK_EQ(mfs_csum_parse("CRC32C"), MFS_CSUM_CRC32C);
	CHECK_EQ(mfs_csum_parse("xxhash"), MFS_CSUM_XXHASH);
	CHECK_EQ(mfs_csum_parse("XXHash64"), MFS_CSUM_XXHASH);
	CHECK_EQ(mfs_csum_parse("SHA256"), MFS_CSUM_SHA256);
	CHECK_EQ(mfs_csum_parse("blake2"), MFS_CSUM_BLAKE2);
	CHECK_EQ(mfs_csum_parse("Blake2B"), MFS_CSUM_BLAKE2);
	CHECK_EQ(mfs_csum_parse("md5"), -EINVAL);
	CHECK_EQ(mfs_csum_parse(""), -EINVAL);
	CHECK_EQ(mfs_csum_parse("crc32"), -EINVAL);
	CHECK_EQ(mfs_csum_parse(NULL), -EINVAL);
}

/* (the build's unit tests run where libcrypto is installed: all four are there) */
static void test_available(void)
{
	int t;

	for (t = MFS_CSUM_CRC32C; t <= MFS_CSUM_BLAKE2; t++)
		CHECK_EQ(mfs_csum_available(t), 0);
	CHECK_EQ(mfs_csum_available(4), -EINVAL);
	CHECK_EQ(mfs_csum_available(-1), -EINVAL);
}

static void test_compute_errors(void)
{
	u8 out[MFS_CSUM_SIZE];

	CHECK_EQ(mfs_csum_compute(4, "abc", 3, out), -EINVAL);
	CHECK_EQ(mfs_csum_compute(-1, "abc", 3, out), -EINVAL);
	CHECK_EQ(mfs_csum_compute(MFS_CSUM_CRC32C, "abc", 3, NULL), -EINVAL);
	CHECK_EQ(mfs_csum_compute(MFS_CSUM_SHA256, NULL, 3, out), -EINVAL);
	CHECK_EQ(mfs_csum_compute(MFS_CSUM_SHA256, NULL, 0, out), 0);
}

/* A flipped bit in a 4 KiB sector must change every algorithm's sum. */
static void test_sector_bitflip(void)
{
	static u8 sector[4096];
	int type;

	for (type = MFS_CSUM_CRC32C; type <= MFS_CSUM_BLAKE2; type++) {
		u8 a[MFS_CSUM_SIZE], b[MFS_CSUM_SIZE];

		memset(sector, 0x5a, sizeof(sector));
		REQUIRE(mfs_csum_compute(type, sector, sizeof(sector), a) == 0);
		sector[1234] ^= 0x08;
		REQUIRE(mfs_csum_compute(type, sector, sizeof(sector), b) == 0);
		CHECK(memcmp(a, b, MFS_CSUM_SIZE) != 0);
	}
}

int main(void)
{
	RUN(test_crc32c_vector);
	RUN(test_crc32c_chaining);
	RUN(test_xxhash_vectors);
	RUN(test_sha256_vector);
	RUN(test_blake2_vector);
	RUN(test_sizes_and_names);
	RUN(test_parse);
	RUN(test_available);
	RUN(test_compute_errors);
	RUN(test_sector_bitflip);
	UNIT_EXIT();
}
