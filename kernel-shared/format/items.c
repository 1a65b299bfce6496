/* The entries of DIR_ITEM, DIR_INDEX and XATTR_ITEM items (items.h). */
#include <errno.h>
#include <string.h>
#include "kernel-shared/format/items.h"

void mfs_entry_iter_init(struct mfs_entry_iter *it, const void *data, u32 size, bool xattr)
{
	it->data = data;
	it->size = size;
	it->off = 0;
	it->xattr = xattr;
}

int mfs_entry_next(struct mfs_entry_iter *it, struct mfs_entry *e)
{
	u32 left = it->size - it->off;
	const u8 *p = it->data + it->off;

	if (it->off >= it->size)
		return 0;
	memset(e, 0, sizeof(*e));
	e->off = it->off;
	if (it->xattr) {
		if (left < sizeof(*e->xi))
			return -EUCLEAN;
		e->xi = (const void *)p;
		e->name_len = le16_to_cpu(e->xi->name_len);
		e->value_len = le16_to_cpu(e->xi->value_len);
		e->size = sizeof(*e->xi) + e->name_len + e->value_len;
		e->name = p + sizeof(*e->xi);
		e->value = e->name + e->name_len;
	} else {
		if (left < sizeof(*e->di))
			return -EUCLEAN;
		e->di = (const void *)p;
		e->name_len = le16_to_cpu(e->di->name_len);
		e->size = sizeof(*e->di) + e->name_len;
		e->name = p + sizeof(*e->di);
	}
	/* names are 1 to 255 bytes (format §7.5); an empty one is no entry */
	if (e->name_len == 0 || e->name_len > MFS_NAME_LEN || left < e->size)
		return -EUCLEAN;
	it->off += e->size;
	return 1;
}

int mfs_entry_find(const void *data, u32 size, bool xattr, const void *name, size_t len,
		   struct mfs_entry *e)
{
	struct mfs_entry_iter it;
	int ret;

	mfs_entry_iter_init(&it, data, size, xattr);
	while ((ret = mfs_entry_next(&it, e)) == 1)
		if (e->name_len == len && !memcmp(e->name, name, len))
			return 0;
	return ret ? ret : -ENOENT;
}

bool mfs_dir_name_valid(const u8 *name, u32 len)
{
	if (len == 0 || len > MFS_NAME_LEN)
		return false;
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return false;
	return !memchr(name, '/', len) && !memchr(name, 0, len);
}
