/*
 * mfs check --repair: the fixes the phases recorded beside their problems,
 * applied to a filesystem opened writable. Only what has a trustworthy
 * source is fixed: a superblock copy from the superblock the open
 * verified, a tree block copy from a copy that verifies against its
 * parent's pointer, a block group's used bytes from extent items that
 * were found sound. Everything else is left as it is and reported again
 * by the check that follows.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/ops/check.h"
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/fs/inode-internal.h"
#include "kernel-shared/volumes/volumes.h"

/* A new fix at the end of ctl->fixes, zeroed; NULL without memory (then not fixed). */
static struct mfs_check_fix *new_fix(struct mfs_check_ctl *ctl)
{
	struct mfs_check_fix *f;

	if (MFS_ARRAY_RESERVE(ctl->fixes, ctl->nr_fixes, ctl->max_fixes, 32))
		return NULL;	/* not fixed: the second check says so */
	f = &ctl->fixes[ctl->nr_fixes++];
	memset(f, 0, sizeof(*f));
	return f;
}

void mfs_check_add_fix(struct mfs_check_ctl *ctl, enum mfs_check_fix_kind kind, u64 bytenr,
		       u64 value, int mirror)
{
	struct mfs_check_fix *f;
	int i;

	if (!ctl->repair)
		return;
	for (i = 0; i < ctl->nr_fixes; i++) {
		f = &ctl->fixes[i];
		if (f->kind == kind && f->bytenr == bytenr && f->mirror == mirror)
			return;		/* once: e.g. the superblocks for many bad copies */
	}
	f = new_fix(ctl);
	if (f)
		*f = (struct mfs_check_fix){ .kind = kind, .bytenr = bytenr, .value = value,
					     .mirror = mirror };
}

void mfs_check_add_entry_fix(struct mfs_check_ctl *ctl, enum mfs_check_fix_kind kind, u64 dir,
			     const struct mfs_dir_item *di, u32 len)
{
	struct mfs_check_fix *f;
	void *entry;

	if (!ctl->repair)
		return;
	entry = malloc(len);
	if (!entry)
		return;
	f = new_fix(ctl);
	if (!f) {
		free(entry);
		return;
	}
	memcpy(entry, di, len);
	f->kind = kind;
	f->bytenr = dir;
	f->value = le64_to_cpu(di->index);
	f->entry = entry;
	f->entry_len = len;
}

void mfs_check_drop_fixes(struct mfs_check_ctl *ctl, enum mfs_check_fix_kind kind)
{
	int i, n = 0;

	for (i = 0; i < ctl->nr_fixes; i++)
		if (ctl->fixes[i].kind != kind)
			ctl->fixes[n++] = ctl->fixes[i];
	ctl->nr_fixes = n;
}

void mfs_check_add_tree_fix(struct mfs_check_ctl *ctl, u64 bytenr, int mirror,
			    const struct mfs_tree_check *chk)
{
	struct mfs_check_fix *f;

	mfs_check_add_fix(ctl, MFS_FIX_TREE_COPY, bytenr, 0, mirror);
	if (!ctl->nr_fixes)
		return;
	f = &ctl->fixes[ctl->nr_fixes - 1];
	if (f->kind != MFS_FIX_TREE_COPY || f->bytenr != bytenr || f->mirror != mirror)
		return;
	f->chk = *chk;
	f->chk.first_key = NULL;
	if (chk->first_key) {
		f->first_key = *chk->first_key;
		f->chk.first_key = &f->first_key;
	}
}

void mfs_check_add_tree_extent_fix(struct mfs_check_ctl *ctl, const struct mfs_check_block *b)
{
	struct mfs_check_fix *f;

	mfs_check_add_fix(ctl, MFS_FIX_TREE_EXTENT, b->bytenr, b->owner, b->level);
	if (!ctl->nr_fixes)
		return;
	f = &ctl->fixes[ctl->nr_fixes - 1];
	if (f->kind != MFS_FIX_TREE_EXTENT || f->bytenr != b->bytenr)
		return;
	f->chk = (struct mfs_tree_check){ .level = b->level, .owner = b->owner, .transid = b->gen };
}

static void say(void (*done)(void *, const char *), void *arg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(void (*done)(void *, const char *), void *arg, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!done)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	done(arg, buf);
}

/* Copy f->mirror of a tree block, from the block as a verified read gives it. */
static int fix_tree_copy(struct mfs_fs_info *fs, const struct mfs_check_fix *f)
{
	struct mfs_tree_check chk = f->chk;
	struct extent_buffer *eb;
	int ret;

	/* the first key's pointer follows the fixes array, which may have moved */
	chk.first_key = f->chk.first_key ? &f->first_key : NULL;
	ret = mfs_read_tree_block(fs, f->bytenr, &chk, &eb);
	if (ret)
		return ret;
	ret = mfs_write_logical_mirror(fs, f->bytenr, eb->data, fs->nodesize, f->mirror);
	mfs_eb_put(fs, eb);
	return ret;
}

static bool in_transaction(enum mfs_check_fix_kind kind)
{
	return kind == MFS_FIX_BG_USED || kind == MFS_FIX_NLINK || kind == MFS_FIX_DIR_SIZE ||
	       kind == MFS_FIX_NBYTES || kind == MFS_FIX_DIR_ITEM || kind == MFS_FIX_DIR_INDEX ||
	       kind == MFS_FIX_LOST_FOUND || kind == MFS_FIX_TREE_EXTENT;
}

/*
 * Tree blocks in use without an extent item: the allocator takes their
 * space for free. First (before this transaction's copy-on-write takes
 * any space) every one is taken out of its block group's free space,
 * then it gets its item - one reference, its tree, level and generation,
 * as the allocator makes them - and its block group's used bytes are
 * counted again from the items. Refused (-EUCLEAN) when the space is not
 * free: another extent holds part of it.
 */
static int fix_tree_extents(struct mfs_trans_handle *trans, struct mfs_check_ctl *ctl, int *nfixed)
{
	struct mfs_fs_info *fs = trans->fs_info;
	int i, k, ret = 0;

	for (i = 0; i < ctl->nr_fixes && !ret; i++) {
		const struct mfs_check_fix *f = &ctl->fixes[i];
		struct mfs_block_group *bg;

		if (f->kind != MFS_FIX_TREE_EXTENT)
			continue;
		bg = mfs_lookup_block_group(fs, f->bytenr);
		ret = bg ? mfs_free_space_remove(bg, f->bytenr, fs->nodesize) : -EUCLEAN;
	}
	for (i = 0; i < ctl->nr_fixes && !ret; i++) {
		const struct mfs_check_fix *f = &ctl->fixes[i];
		struct mfs_key key = { f->bytenr, MFS_EXTENT_ITEM_KEY, fs->nodesize };
		struct mfs_extent_item item = {
			.refs = cpu_to_le64(1),
			.generation = cpu_to_le64(f->chk.transid),
			.flags = cpu_to_le64(MFS_EXTENT_FLAG_TREE_BLOCK),
			.owner_root = cpu_to_le64(f->chk.owner),
			.owner_objectid = cpu_to_le64(f->chk.level),
		};

		if (f->kind != MFS_FIX_TREE_EXTENT)
			continue;
		ret = mfs_insert_item(trans, fs->extent_root, &key, &item, sizeof(item));
		(*nfixed)++;
	}
	for (i = 0; i < ctl->nr_fixes && !ret; i++) {
		struct mfs_block_group *bg;
		struct mfs_range *r;
		int n, j;

		if (ctl->fixes[i].kind != MFS_FIX_TREE_EXTENT)
			continue;
		bg = mfs_lookup_block_group(fs, ctl->fixes[i].bytenr);
		/* once per block group: an earlier fix in it counted it already */
		for (j = 0; j < i; j++)
			if (ctl->fixes[j].kind == MFS_FIX_TREE_EXTENT &&
			    mfs_lookup_block_group(fs, ctl->fixes[j].bytenr) == bg)
				break;
		if (j < i)
			continue;
		ret = mfs_bg_used_ranges(fs, bg, &r, &n);
		if (ret)
			break;
		bg->used = 0;
		for (k = 0; k < n; k++)
			bg->used += r[k].len;
		bg->dirty = true;
		free(r);
	}
	return ret;
}

/*
 * The missing half of a directory entry, from the half that is there (the
 * checker took it only when it names an inode of its type): a DIR_ITEM
 * appended under its name's hash (beside colliding names), or a DIR_INDEX
 * under its index, which no other entry of the directory uses.
 */
static int fix_dir_entry(struct mfs_trans_handle *trans, const struct mfs_check_fix *f)
{
	struct mfs_fs_info *fs = trans->fs_info;
	const struct mfs_dir_item *di = f->entry;
	struct mfs_key key = { f->bytenr, MFS_DIR_INDEX_KEY, le64_to_cpu(di->index) };

	if (f->kind == MFS_FIX_DIR_INDEX)
		return mfs_insert_item(trans, fs->fs_root, &key, f->entry, f->entry_len);
	key.type = MFS_DIR_ITEM_KEY;
	key.offset = mfs_name_hash((const char *)(di + 1), le16_to_cpu(di->name_len));
	return inode_item_append(trans, fs->fs_root, &key, f->entry, f->entry_len);
}

/* One field of an inode item, as the fs tree walk counted it. */
static int fix_inode(struct mfs_trans_handle *trans, const struct mfs_check_fix *f)
{
	struct mfs_inode_item ii;
	int ret = mfs_read_inode(trans->fs_info, f->bytenr, &ii);

	if (ret)
		return ret;
	if (f->kind == MFS_FIX_NLINK)
		ii.nlink = cpu_to_le32(f->value);
	else if (f->kind == MFS_FIX_DIR_SIZE)
		ii.size = cpu_to_le64(f->value);
	else
		ii.nbytes = cpu_to_le64(f->value);
	return mfs_write_inode(trans, f->bytenr, &ii);
}

static int fix_bg_used(struct mfs_fs_info *fs, const struct mfs_check_fix *f)
{
	struct mfs_block_group *bg = mfs_lookup_block_group(fs, f->bytenr);

	if (!bg || bg->start != f->bytenr)
		return -ENOENT;
	bg->used = f->value;
	bg->dirty = true;
	return 0;
}

/*
 * An inode no entry names, into lost+found (made on the first), as
 * btrfs check --repair does; the name it got kept in f->entry for the
 * line that says so.
 */
static int fix_lost_found(struct mfs_trans_handle *trans, struct mfs_check_fix *f, u64 *dir)
{
	char name[MFS_NAME_LEN + 1];
	int ret = 0;

	if (!*dir)
		ret = inode_lost_found_dir(trans, dir);
	if (!ret)
		ret = inode_link_lost(trans, *dir, f->bytenr, f->value, name);
	if (ret)
		return ret;
	f->entry = strdup(name);
	return f->entry ? 0 : -ENOMEM;
}

/*
 * The fixes that change items (block group used bytes, inode fields,
 * directory entries), in one transaction: all of them or none. Moves into
 * lost+found come last: the counts the other fixes set are those the walk
 * made, before lost+found changed its directory and the root. The number
 * in *nfixed.
 */
static int fix_items(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl, int *nfixed)
{
	struct mfs_trans_handle *trans;
	u64 lost_found = 0;
	int i, ret = 0;

	*nfixed = 0;
	for (i = 0; i < ctl->nr_fixes && !in_transaction(ctl->fixes[i].kind); i++)
		;
	if (i == ctl->nr_fixes)
		return 0;
	ret = mfs_start_transaction(fs, &trans);
	if (ret)
		return ret;
	ret = fix_tree_extents(trans, ctl, nfixed);
	for (i = 0; i < ctl->nr_fixes && !ret; i++) {
		const struct mfs_check_fix *f = &ctl->fixes[i];

		if (!in_transaction(f->kind) || f->kind == MFS_FIX_LOST_FOUND ||
		    f->kind == MFS_FIX_TREE_EXTENT)
			continue;
		if (f->kind == MFS_FIX_BG_USED)
			ret = fix_bg_used(fs, f);
		else if (f->kind == MFS_FIX_DIR_ITEM || f->kind == MFS_FIX_DIR_INDEX)
			ret = fix_dir_entry(trans, f);
		else
			ret = fix_inode(trans, f);
		(*nfixed)++;
	}
	for (i = 0; i < ctl->nr_fixes && !ret; i++) {
		if (ctl->fixes[i].kind != MFS_FIX_LOST_FOUND)
			continue;
		ret = fix_lost_found(trans, &ctl->fixes[i], &lost_found);
		(*nfixed)++;
	}
	if (ret) {
		mfs_end_transaction(trans);
		mfs_abort_transaction(fs);
		*nfixed = 0;
		return ret;
	}
	return mfs_commit_transaction(trans);
}

/* The line for a fix fix_items applied. */
static void say_item_fix(void (*done)(void *, const char *), void *arg,
			 const struct mfs_check_fix *f)
{
	unsigned long long id = f->bytenr, v = f->value;

	switch (f->kind) {
	case MFS_FIX_BG_USED:
		say(done, arg, "block group %llu: used set to %llu from its extent items", id, v);
		break;
	case MFS_FIX_NLINK:
		say(done, arg, "inode %llu: link count set to %llu", id, v);
		break;
	case MFS_FIX_DIR_SIZE:
		say(done, arg, "directory %llu: size set to %llu from its entries", id, v);
		break;
	case MFS_FIX_NBYTES:
		say(done, arg, "inode %llu: nbytes set to %llu from its file extents", id, v);
		break;
	case MFS_FIX_DIR_ITEM:
	case MFS_FIX_DIR_INDEX:
		say(done, arg, "dir %llu entry index %llu: %s rebuilt from its %s", id, v,
		    f->kind == MFS_FIX_DIR_ITEM ? "DIR_ITEM" : "DIR_INDEX",
		    f->kind == MFS_FIX_DIR_ITEM ? "DIR_INDEX" : "DIR_ITEM");
		break;
	case MFS_FIX_TREE_EXTENT:
		say(done, arg, "tree block %llu: extent item made again (tree %llu, level %d, generation %llu)",
		    id, (unsigned long long)f->chk.owner, f->chk.level,
		    (unsigned long long)f->chk.transid);
		break;
	case MFS_FIX_LOST_FOUND:
		say(done, arg, "Moving file '%s' to 'lost+found' dir since it has no valid backref (inode %llu, link count %llu)",
		    f->entry ? (const char *)f->entry : "?", id, v);
		break;
	default:
		break;
	}
}

int mfs_check_repair(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl,
		     void (*done)(void *arg, const char *msg), u64 *applied)
{
	int i, n = 0, ret = 0, first_err = 0;

	*applied = 0;
	for (i = 0; i < ctl->nr_fixes; i++) {
		const struct mfs_check_fix *f = &ctl->fixes[i];

		if (f->kind == MFS_FIX_TREE_COPY) {
			ret = fix_tree_copy(fs, f);
			if (!ret)
				say(done, ctl->arg, "tree block %llu: copy %d rewritten from a good copy",
				    (unsigned long long)f->bytenr, f->mirror);
		} else if (f->kind == MFS_FIX_SUPERS) {
			ret = mfs_write_all_supers(fs);
			if (!ret)
				say(done, ctl->arg, "superblocks: every copy rewritten from generation %llu",
				    (unsigned long long)fs->generation);
		} else {
			continue;
		}
		if (ret) {
			say(done, ctl->arg, "%s %llu: not repaired: %s",
			    f->kind == MFS_FIX_SUPERS ? "superblocks of generation" : "tree block",
			    (unsigned long long)(f->kind == MFS_FIX_SUPERS ? fs->generation : f->bytenr),
			    strerror(-ret));
			first_err = first_err ? first_err : ret;
			continue;
		}
		(*applied)++;
	}
	ret = mfs_flush_all_devices(fs);
	if (!ret)
		ret = fix_items(fs, ctl, &n);
	if (ret)
		say(done, ctl->arg, "block group and inode items: not repaired: %s", strerror(-ret));
	for (i = 0; !ret && i < ctl->nr_fixes; i++)
		say_item_fix(done, ctl->arg, &ctl->fixes[i]);
	if (!ret)
		*applied += n;
	return ret ? ret : first_err;
}
