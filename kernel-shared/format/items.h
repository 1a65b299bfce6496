/*
 * The entries packed in one DIR_ITEM, DIR_INDEX or XATTR_ITEM (format
 * §7.5): a fixed header, the name and, for an xattr, the value. Item bytes
 * are untrusted: every walker of them goes through mfs_entry_next, the one
 * bounds check.
 */
#ifndef MFS_ITEMS_H
#define MFS_ITEMS_H

#include "kernel-shared/format/format.h"

struct mfs_entry {
	u32 off;			/* where it starts in the item */
	u32 size;			/* header, name and value */
	const struct mfs_dir_item *di;	/* a directory entry's header, else NULL */
	const struct mfs_xattr_item *xi;	/* an xattr's header, else NULL */
	const u8 *name;
	u16 name_len;
	const u8 *value;		/* an xattr's value, else NULL */
	u16 value_len;
};

struct mfs_entry_iter {
	const u8 *data;
	u32 size;
	u32 off;
	bool xattr;
};

/* Walk the entries of an item of size bytes; xattr: an XATTR_ITEM. */
void mfs_entry_iter_init(struct mfs_entry_iter *it, const void *data, u32 size, bool xattr);
/*
 * The next entry: 1 with e filled, 0 after the last one, -EUCLEAN when
 * what is left of the item is not a whole entry (trailing bytes too) or
 * its name is empty or longer than MFS_NAME_LEN.
 */
int mfs_entry_next(struct mfs_entry_iter *it, struct mfs_entry *e);
/* The entry called name: 0 with e filled, -ENOENT, or -EUCLEAN as above. */
int mfs_entry_find(const void *data, u32 size, bool xattr, const void *name, size_t len,
		   struct mfs_entry *e);
/*
 * Whether len bytes at name can be a directory entry's name (format
 * §7.5.4): 1 to 255 bytes, no '/' and no NUL, not "." or "..". A name read
 * from disk that is not is corruption, never to be handed on as a path
 * component (restore would write outside its target).
 */
bool mfs_dir_name_valid(const u8 *name, u32 len);

#endif
