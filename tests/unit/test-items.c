/*
 * Unit tests for kernel-shared/format/items.c: the one walker of the
 * entries packed in DIR_ITEM, DIR_INDEX and XATTR_ITEM items, on whole,
 * truncated and over-long items and names out of bounds (their bytes are
 * untrusted).
 */
#include <errno.h>

#include "kernel-shared/format/items.h"
#include "unit.h"

static u8 item[512];

/* Append a directory entry (xattr: with value) at *len. */
static void put(u32 *len, bool xattr, const char *name, const char *value)
{
	u16 nlen = strlen(name), vlen = value ? strlen(value) : 0;

	if (xattr) {
		struct mfs_xattr_item xi = { 0 };

		xi.name_len = cpu_to_le16(nlen);
		xi.value_len = cpu_to_le16(vlen);
		memcpy(item + *len, &xi, sizeof(xi));
		*len += sizeof(xi);
	} else {
		struct mfs_dir_item di = { 0 };

		di.child = cpu_to_le64(257 + *len);
		di.name_len = cpu_to_le16(nlen);
		memcpy(item + *len, &di, sizeof(di));
		*len += sizeof(di);
	}
	memcpy(item + *len, name, nlen);
	*len += nlen;
	if (xattr) {
		memcpy(item + *len, value, vlen);
		*len += vlen;
	}
}

static int count(u32 len, bool xattr, int *n)
{
	struct mfs_entry_iter it;
	struct mfs_entry e;
	int ret;

	*n = 0;
	mfs_entry_iter_init(&it, item, len, xattr);
	while ((ret = mfs_entry_next(&it, &e)) == 1)
		(*n)++;
	return ret;
}

static void test_dir_entries(void)
{
	struct mfs_entry_iter it;
	struct mfs_entry e;
	u32 len = 0;

	put(&len, false, "a", NULL);
	put(&len, false, "bcd", NULL);
	mfs_entry_iter_init(&it, item, len, false);
	REQUIRE(mfs_entry_next(&it, &e) == 1);
	CHECK_EQ(e.off, 0);
	CHECK_EQ(e.size, sizeof(struct mfs_dir_item) + 1);
	CHECK_EQ(e.name_len, 1);
	CHECK(!memcmp(e.name, "a", 1));
	CHECK(e.di && !e.xi && !e.value);
	CHECK_EQ(le64_to_cpu(e.di->child), 257);
	REQUIRE(mfs_entry_next(&it, &e) == 1);
	CHECK_EQ(e.off, sizeof(struct mfs_dir_item) + 1);
	CHECK(!memcmp(e.name, "bcd", 3));
	CHECK_EQ(mfs_entry_next(&it, &e), 0);
	CHECK_EQ(mfs_entry_next(&it, &e), 0);
}

static void test_xattr_entries(void)
{
	struct mfs_entry e;
	u32 len = 0;

	put(&len, true, "user.a", "v1");
	put(&len, true, "user.bb", "");
	put(&len, true, "user.c", "value");
	CHECK_EQ(mfs_entry_find(item, len, true, "user.c", 6, &e), 0);
	CHECK_EQ(e.value_len, 5);
	CHECK(!memcmp(e.value, "value", 5));
	CHECK(e.xi && !e.di);
	CHECK_EQ(e.off + e.size, len);
	CHECK_EQ(mfs_entry_find(item, len, true, "user.bb", 7, &e), 0);
	CHECK_EQ(e.value_len, 0);
	CHECK_EQ(mfs_entry_find(item, len, true, "user.b", 6, &e), -ENOENT);
}

/* Every cut of an item that is not at an entry boundary is -EUCLEAN. */
static void test_every_truncation(void)
{
	u32 len = 0, bounds[3], cut;
	int b = 0, n;

	put(&len, true, "user.x", "12");
	bounds[b++] = len;
	put(&len, true, "user.yy", "345");
	bounds[b++] = len;
	for (cut = 0; cut <= len; cut++) {
		bool whole = cut == 0 || cut == bounds[0] || cut == bounds[1];
		int ret = count(cut, true, &n);

		if (whole) {
			CHECK_EQ(ret, 0);
			CHECK_EQ(n, cut == 0 ? 0 : cut == bounds[0] ? 1 : 2);
		} else {
			CHECK_EQ(ret, -EUCLEAN);
		}
	}
}

/* Trailing bytes too short for a header are damage, not ignored. */
static void test_trailing_bytes(void)
{
	struct mfs_entry e;
	u32 len = 0;
	int n;

	put(&len, false, "name", NULL);
	item[len++] = 0;
	CHECK_EQ(count(len, false, &n), -EUCLEAN);
	CHECK_EQ(n, 1);
	CHECK_EQ(mfs_entry_find(item, len, false, "zz", 2, &e), -EUCLEAN);
	/* found before the damage is found */
	CHECK_EQ(mfs_entry_find(item, len, false, "name", 4, &e), 0);
}

/* A name length pointing past the item, the largest the field holds. */
static void test_huge_name_len(void)
{
	struct mfs_dir_item di = { 0 };
	int n;

	di.name_len = cpu_to_le16(0xffff);
	memcpy(item, &di, sizeof(di));
	CHECK_EQ(count(sizeof(di) + 10, false, &n), -EUCLEAN);
	CHECK_EQ(n, 0);
}

/*
 * An empty name, and one of 256 bytes that the item does hold, are
 * damage (names are 1 to 255 bytes): the image fuzzer found the checker
 * copying an empty name from a NULL buffer.
 */
static void test_name_len_bounds(void)
{
	char name[MFS_NAME_LEN + 2];
	u32 len = 0;
	int n;

	put(&len, false, "", NULL);
	CHECK_EQ(count(len, false, &n), -EUCLEAN);
	CHECK_EQ(n, 0);
	len = 0;
	put(&len, true, "", "v");
	CHECK_EQ(count(len, true, &n), -EUCLEAN);
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	len = 0;
	put(&len, false, name, NULL);
	CHECK_EQ(count(len, false, &n), -EUCLEAN);
	name[MFS_NAME_LEN] = 0;
	len = 0;
	put(&len, false, name, NULL);
	CHECK_EQ(count(len, false, &n), 0);
	CHECK_EQ(n, 1);
}

/*
 * The names a directory entry may not have (format §7.5.4): "." and "..",
 * a '/' or a NUL anywhere. A crafted image with an entry "../evl" made
 * restore write outside its target.
 */
static void test_dir_name_valid(void)
{
	char longest[MFS_NAME_LEN + 1];

	memset(longest, 'n', sizeof(longest));
	CHECK(mfs_dir_name_valid((const u8 *)"f", 1));
	CHECK(mfs_dir_name_valid((const u8 *)"...", 3));
	CHECK(mfs_dir_name_valid((const u8 *)".x", 2));
	CHECK(mfs_dir_name_valid((const u8 *)longest, MFS_NAME_LEN));
	CHECK(!mfs_dir_name_valid((const u8 *)longest, MFS_NAME_LEN + 1));
	CHECK(!mfs_dir_name_valid((const u8 *)"", 0));
	CHECK(!mfs_dir_name_valid((const u8 *)".", 1));
	CHECK(!mfs_dir_name_valid((const u8 *)"..", 2));
	CHECK(!mfs_dir_name_valid((const u8 *)"../evl", 6));
	CHECK(!mfs_dir_name_valid((const u8 *)"a/b", 3));
	CHECK(!mfs_dir_name_valid((const u8 *)"/", 1));
	CHECK(!mfs_dir_name_valid((const u8 *)"a\0b", 3));
}

int main(void)
{
	RUN(test_dir_entries);
	RUN(test_xattr_entries);
	RUN(test_every_truncation);
	RUN(test_trailing_bytes);
	RUN(test_huge_name_len);
	RUN(test_name_len_bounds);
	RUN(test_dir_name_valid);
	UNIT_EXIT();
}
