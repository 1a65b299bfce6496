/*
 * The files a scrub found bad copies in: noted by inode as the scrub goes,
 * kept in the root tree with its state (so a scrub that an unmount or a
 * crash stopped still names them), and named by path when it ends.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/ops/scrub-internal.h"
#include "kernel-shared/ops/restripe-internal.h"
#include "kernel-shared/fs/inode.h"
#include "kernel-shared/tree/transaction.h"

void mfs_scrub_note_ino(struct mfs_scrub *sc, u64 ino, bool uncorrectable)
{
	int i;

	for (i = 0; i < sc->nr_inos; i++) {
		if (sc->inos[i].ino == ino) {
			sc->files_dirty |= uncorrectable && !sc->inos[i].uncorrectable;
			sc->inos[i].uncorrectable |= uncorrectable;
			return;
		}
	}
	if (sc->nr_inos < SCRUB_MAX_INOS) {
		sc->inos[sc->nr_inos++] = (struct scrub_ino){ ino, uncorrectable };
		sc->files_dirty = true;
	}
}

struct dir_entries {
	u64 *ino;
	u32 *type;
	char **name;
	int n, max;
	int err;
};

static int collect_entry(void *arg, const char *name, u64 ino, u32 type, u64 next)
{
	struct dir_entries *d = arg;

	(void)next;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (d->n == d->max) {
		int max = d->max ? d->max * 2 : 64;
		u64 *i2 = realloc(d->ino, max * sizeof(*i2));
		u32 *t2 = i2 ? realloc(d->type, max * sizeof(*t2)) : NULL;
		char **n2 = t2 ? realloc(d->name, max * sizeof(*n2)) : NULL;

		if (i2)
			d->ino = i2;
		if (t2)
			d->type = t2;
		if (!n2) {
			d->err = -ENOMEM;
			return 1;
		}
		d->name = n2;
		d->max = max;
	}
	d->name[d->n] = strdup(name);
	if (!d->name[d->n]) {
		d->err = -ENOMEM;
		return 1;
	}
	d->ino[d->n] = ino;
	d->type[d->n++] = type;
	return 0;
}

struct path_search {
	const struct scrub_ino *inos;
	char **paths;			/* found, by index of inos */
	int n, left;
};

/*
 * Depth first from dir (whose path is cur), a path for each inode sought.
 * Each directory is listed whole first: mfs_readdir holds fs->lock while
 * it calls back, so the walk goes down only after it returns.
 */
static void find_paths(struct mfs_fs_info *fs, u64 dir, const char *cur, struct path_search *ps)
{
	struct dir_entries d = { 0 };
	char path[PATH_MAX];
	int i, k;

	if (mfs_readdir(fs, dir, 0, collect_entry, &d) == 0 && !d.err) {
		for (i = 0; i < d.n && ps->left; i++) {
			snprintf(path, sizeof(path), "%s/%s", cur, d.name[i]);
			for (k = 0; k < ps->n; k++) {
				if (ps->inos[k].ino == d.ino[i] && !ps->paths[k]) {
					ps->paths[k] = strdup(path);
					ps->left--;
				}
			}
			if (d.type[i] == MFS_FT_DIR)
				find_paths(fs, d.ino[i], path, ps);
		}
	}
	for (i = 0; i < d.n; i++)
		free(d.name[i]);
	free(d.name);
	free(d.ino);
	free(d.type);
}

void mfs_scrub_name_files(struct mfs_fs_info *fs, struct mfs_scrub *sc)
{
	struct scrub_ino inos[SCRUB_MAX_INOS];
	char *paths[SCRUB_MAX_INOS] = { NULL };
	struct path_search ps = { inos, paths, 0, 0 };
	int k;

	pthread_mutex_lock(&fs->lock);
	ps.n = ps.left = sc->nr_inos;
	memcpy(inos, sc->inos, sizeof(inos[0]) * ps.n);
	pthread_mutex_unlock(&fs->lock);
	if (ps.n)
		find_paths(fs, MFS_ROOT_DIR_OBJECTID, "", &ps);
	pthread_mutex_lock(&fs->lock);
	for (k = 0; k < ps.n; k++) {
		if (paths[k])
			mfs_scrub_add_line(sc, "%c %s", inos[k].uncorrectable ? 'U' : 'C', paths[k]);
		else
			mfs_scrub_add_line(sc, "%c inode %llu (no path: deleted since)",
				 inos[k].uncorrectable ? 'U' : 'C', (unsigned long long)inos[k].ino);
		free(paths[k]);
	}
	/* named once: a resumed run names only what it finds itself */
	memmove(sc->inos, sc->inos + ps.n, (sc->nr_inos - ps.n) * sizeof(sc->inos[0]));
	sc->nr_inos -= ps.n;
	sc->files_dirty |= ps.n > 0;
	pthread_mutex_unlock(&fs->lock);
}

/* ---------------- kept with the scrub's state ---------------- */

static const struct mfs_key files_key = { MFS_SCRUB_OBJECTID, MFS_PERSISTENT_ITEM_KEY, 1 };

int mfs_scrub_files_save(struct mfs_trans_handle *trans, struct mfs_scrub *sc)
{
	struct mfs_scrub_file f[SCRUB_MAX_INOS];
	struct mfs_root *root = trans->fs_info->tree_root;
	int i, ret;

	if (!sc->files_dirty)
		return 0;
	for (i = 0; i < sc->nr_inos; i++) {
		f[i].ino = cpu_to_le64(sc->inos[i].ino);
		f[i].flags = cpu_to_le64(sc->inos[i].uncorrectable ? MFS_SCRUB_FILE_UNCORRECTABLE : 0);
	}
	if (sc->nr_inos)
		ret = mfs_write_item(trans, root, &files_key, f, sc->nr_inos * sizeof(f[0]));
	else
		ret = rs_delete_if_there(trans, root, &files_key);
	if (ret < 0)
		return ret;
	sc->files_dirty = false;
	return 0;
}

int mfs_scrub_files_load(struct mfs_fs_info *fs, struct mfs_scrub *sc)
{
	struct mfs_path path;
	u32 size, i;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(NULL, fs->tree_root, &files_key, &path, 0, 0);
	if (ret) {
		mfs_release_path(&path);
		return ret > 0 ? 0 : ret;
	}
	size = leaf_item_size(path.nodes[0], path.slots[0]);
	if (!size || size % sizeof(struct mfs_scrub_file) ||
	    size / sizeof(struct mfs_scrub_file) > SCRUB_MAX_INOS) {
		mfs_release_path(&path);
		return -EUCLEAN;
	}
	for (i = 0; i < size / sizeof(struct mfs_scrub_file); i++) {
		struct mfs_scrub_file f;

		memcpy(&f, leaf_item_data(path.nodes[0], path.slots[0]) + i * sizeof(f), sizeof(f));
		sc->inos[i].ino = le64_to_cpu(f.ino);
		sc->inos[i].uncorrectable = le64_to_cpu(f.flags) & MFS_SCRUB_FILE_UNCORRECTABLE;
	}
	sc->nr_inos = i;
	mfs_release_path(&path);
	return 0;
}
