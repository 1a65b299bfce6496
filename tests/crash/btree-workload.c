/*
 * A B-tree workload for the crash tests, and its verifier.
 *
 *   btree-workload run SEED T PATH...
 *	opens the filesystem on PATH... and commits T transactions, each a
 *	random mix of inserts, deletes, overwrites, extends and truncates of
 *	items in the fs tree, drawn from SEED and the transaction's generation.
 *   btree-workload verify [--stale-supers-ok] SEED PATH...
 *	opens the filesystem read-only, rebuilds the model for its generation
 *	G from SEED, requires the fs tree to hold exactly the model's items and
 *	every phase of `mfs check` to find nothing else; prints "generation G
 *	items N
 *	metadata_chunks C".
 *
 * The workload's items live in an objectid range of their own, far above
 * what the filesystem itself creates, with item types the fs layer does not
 * use, so the fs tree checker sees each of those objectids as one "inode
 * with items but no inode item" and looks no further; the verifier
 * tolerates exactly that. Items outside the range are left alone.
 * The first transaction of a run on a fresh fs tree also inserts a marker
 * item naming the generation the workload started from, so the verifier
 * knows where the model begins; a later run with the same seed continues
 * the same model. MFS_WORKLOAD_SCALE=N (default 1) makes a run's
 * transactions N times larger over N times as many keys (up to 16), e.g. to
 * fill metadata chunks; the marker records it for the verifier.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/ops/check.h"
#include "kernel-shared/ops/open.h"

#define NSLOTS		65536	/* the most keys, at the largest scale */
#define MARKER_MAGIC	0x6b726f776572746bULL
#define FIRST_OBJECTID	(1ULL << 48)
#define END_OBJECTID	(FIRST_OBJECTID + NSLOTS / 4)

/* Sorts right before every slot key. */
static const struct mfs_key marker_key = { FIRST_OBJECTID - 1, 0, 0 };

struct marker {
	mfs_le64 magic;
	mfs_le64 base_gen;
	mfs_le64 seed;
	mfs_le64 scale;
} __attribute__((packed));

struct model {
	bool present[NSLOTS];
	u32 size[NSLOTS];
	u64 version[NSLOTS];	/* content: bytes derive from slot and version */
	u32 list[NSLOTS];	/* the present slots, in no order, for picking */
	u32 index[NSLOTS];	/* where a present slot is in list */
	u32 count;
	bool has_marker;
	u64 base_gen;
};

struct workload {
	u64 seed;
	u64 scale;
	u32 nslots;		/* keys in use: 4096 per unit of scale */
	u64 rng;
	u32 max_item;
	struct model *m;
	/* NULL when only the model is replayed */
	struct mfs_trans_handle *trans;
	struct mfs_root *root;
	u8 *buf;
};

static u64 splitmix64(u64 x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static u64 rnd(struct workload *w)
{
	w->rng = splitmix64(w->rng);
	return w->rng;
}

static u64 rnd_below(struct workload *w, u64 n)
{
	return n ? rnd(w) % n : 0;
}

/* Slot order is key order: four keys per objectid, types 2, 32, 62, 92. */
static struct mfs_key slot_key(u32 slot)
{
	struct mfs_key k = {
		.objectid = FIRST_OBJECTID + slot / 4,
		.type = 2 + (slot % 4) * 30,
		.offset = splitmix64(slot),
	};
	return k;
}

static int key_slot(const struct mfs_key *k)
{
	u64 slot;

	if (k->objectid < FIRST_OBJECTID || k->type < 2 || (k->type - 2) % 30)
		return -1;
	slot = (k->objectid - FIRST_OBJECTID) * 4 + (k->type - 2) / 30;
	if (slot >= NSLOTS)
		return -1;
	return slot;
}

static void gen_content(u32 slot, u64 version, u8 *buf, u32 len)
{
	u64 h = splitmix64(splitmix64(slot) ^ version), v;
	u32 i;

	for (i = 0; i < len; i += 8) {
		v = splitmix64(h + i);
		memcpy(buf + i, &v, min_t(u32, 8, len - i));
	}
}

static void fill_marker(struct marker *mk, u64 base_gen, u64 seed, u64 scale)
{
	mk->magic = cpu_to_le64(MARKER_MAGIC);
	mk->base_gen = cpu_to_le64(base_gen);
	mk->seed = cpu_to_le64(seed);
	mk->scale = cpu_to_le64(scale);
}

static void set_scale(struct workload *w, u64 scale)
{
	w->scale = scale < 1 ? 1 : scale > NSLOTS / 4096 ? NSLOTS / 4096 : scale;
	w->nslots = 4096 * w->scale;
}

static int fail(const char *what, u32 slot, int ret)
{
	fprintf(stderr, "btree-workload: %s of slot %u failed: %d (%s)\n",
		what, slot, ret, strerror(-ret));
	return ret ? ret : -EIO;
}

/* Mostly small items, some large enough to split leaves quickly. */
static u32 pick_size(struct workload *w)
{
	u64 r = rnd_below(w, 100);
	u32 size;

	if (r < 70)
		size = rnd_below(w, 200);
	else if (r < 95)
		size = 200 + rnd_below(w, 1300);
	else
		size = 1500 + rnd_below(w, 2500);
	return min_t(u32, size, w->max_item);
}

static u32 pick_present(struct workload *w)
{
	return w->m->list[rnd_below(w, w->m->count)];
}

/* Position a COWed path at slot's item. */
static int find_item(struct workload *w, u32 slot, int ins_len, struct mfs_path *path)
{
	struct mfs_key k = slot_key(slot);
	int ret;

	mfs_init_path(path);
	ret = mfs_search_slot(w->trans, w->root, &k, path, ins_len, 1);
	if (ret > 0)
		ret = -ENOENT;
	if (ret)
		mfs_release_path(path);
	return ret;
}

static int op_insert(struct workload *w, u64 version)
{
	struct model *m = w->m;
	u32 slot = rnd_below(w, w->nslots), size = pick_size(w);
	struct mfs_key k;
	int tries, ret;

	for (tries = 0; m->present[slot] && tries < 8; tries++)
		slot = rnd_below(w, w->nslots);
	while (m->present[slot])
		slot = (slot + 1) % w->nslots;
	m->present[slot] = true;
	m->size[slot] = size;
	m->version[slot] = version;
	m->index[slot] = m->count;
	m->list[m->count++] = slot;
	if (!w->trans)
		return 0;
	k = slot_key(slot);
	gen_content(slot, version, w->buf, size);
	ret = mfs_insert_item(w->trans, w->root, &k, w->buf, size);
	return ret ? fail("insert", slot, ret) : 0;
}

static int delete_slot(struct workload *w, u32 slot)
{
	struct model *m = w->m;
	u32 last = m->list[--m->count];
	struct mfs_path path;
	int ret;

	m->present[slot] = false;
	m->list[m->index[slot]] = last;
	m->index[last] = m->index[slot];
	if (!w->trans)
		return 0;
	ret = find_item(w, slot, -1, &path);
	if (ret)
		return fail("search for delete", slot, ret);
	ret = mfs_del_item(w->trans, w->root, &path);
	mfs_release_path(&path);
	return ret ? fail("delete", slot, ret) : 0;
}

static int op_delete(struct workload *w)
{
	return delete_slot(w, pick_present(w));
}

/* A run of neighbouring items: empties leaves, so nodes merge. */
static int op_delete_run(struct workload *w)
{
	u32 slot = pick_present(w), n = 1 + rnd_below(w, 32);
	int ret = 0;

	for (; slot < w->nslots && n && !ret; slot++) {
		if (!w->m->present[slot])
			continue;
		ret = delete_slot(w, slot);
		n--;
	}
	return ret;
}

/* Resize the item (same size: overwrite in place), then rewrite it all. */
static int op_rewrite(struct workload *w, u64 version, int how)
{
	struct model *m = w->m;
	u32 slot = pick_present(w), old = m->size[slot], size = old;
	struct mfs_path path;
	int ret = 0;

	if (how > 0 && old < w->max_item)
		size = old + 1 + rnd_below(w, min_t(u32, w->max_item - old, 1200));
	else if (how < 0)
		size = rnd_below(w, old + 1);
	m->size[slot] = size;
	m->version[slot] = version;
	if (!w->trans)
		return 0;
	ret = find_item(w, slot, size > old ? (int)(size - old) : 0, &path);
	if (ret)
		return fail("search for rewrite", slot, ret);
	if (size > old)
		ret = mfs_extend_item(w->trans, w->root, &path, size - old);
	else if (size < old)
		ret = mfs_truncate_item(w->trans, &path, size);
	if (!ret) {
		gen_content(slot, version, w->buf, size);
		memcpy(leaf_item_data(path.nodes[0], path.slots[0]), w->buf, size);
		mfs_mark_buffer_dirty(w->trans, path.nodes[0]);
	}
	mfs_release_path(&path);
	return ret ? fail("resize", slot, ret) : 0;
}

/* Percentages of each operation, by the transaction's mood. */
enum { OP_INSERT, OP_DELETE, OP_OVERWRITE, OP_EXTEND, OP_TRUNCATE, OP_DELETE_RUN, NR_OPS };
static const u8 moods[][NR_OPS] = {
	{ 75, 8, 7, 5, 4, 1 },		/* grow */
	{ 35, 30, 15, 10, 9, 1 },	/* churn */
	{ 20, 55, 10, 6, 6, 3 },	/* shrink */
};

static int pick_op(struct workload *w, int mood)
{
	u64 r = rnd_below(w, 100);
	int op;

	for (op = 0; op < NR_OPS - 1; op++) {
		if (r < moods[mood][op])
			break;
		r -= moods[mood][op];
	}
	if (w->m->count == 0)
		return OP_INSERT;
	if (op == OP_INSERT && w->m->count == w->nslots)
		return OP_OVERWRITE;
	return op;
}

/*
 * The changes of the transaction that commits generation gen, applied to
 * the model and, with a transaction, to the fs tree. Only the model and the
 * random stream decide what happens, so replaying the model alone gives the
 * same result.
 */
static int transaction_ops(struct workload *w, u64 gen)
{
	struct model *m = w->m;
	u64 r;
	int nops, mood, i, ret = 0;

	w->rng = splitmix64(w->seed ^ splitmix64(gen));
	if (!m->has_marker) {
		m->has_marker = true;
		m->base_gen = gen - 1;
		if (w->trans) {
			struct marker mk;

			fill_marker(&mk, m->base_gen, w->seed, w->scale);
			ret = mfs_insert_item(w->trans, w->root, &marker_key, &mk, sizeof(mk));
			if (ret)
				return fail("insert of the marker", 0, ret);
		}
	}
	r = rnd_below(w, 100);
	mood = r < 55 ? 0 : r < 90 ? 1 : 2;
	/* now and then a big transaction, to grow the tree by levels */
	nops = rnd_below(w, 4) ? 30 + rnd_below(w, 170) : 400 + rnd_below(w, 600);
	nops *= w->scale;
	for (i = 0; i < nops && !ret; i++) {
		u64 version = gen << 20 | i;

		switch (pick_op(w, mood)) {
		case OP_INSERT:
			ret = op_insert(w, version);
			break;
		case OP_DELETE:
			ret = op_delete(w);
			break;
		case OP_OVERWRITE:
			ret = op_rewrite(w, version, 0);
			break;
		case OP_EXTEND:
			ret = op_rewrite(w, version, 1);
			break;
		case OP_TRUNCATE:
			ret = op_rewrite(w, version, -1);
			break;
		default:
			ret = op_delete_run(w);
		}
	}
	return ret;
}

static u32 max_item_size(const struct mfs_fs_info *fs)
{
	return min_t(u32, (leaf_data_size(fs) - sizeof(struct mfs_item)) / 4, 4000);
}

static void model_replay(struct workload *w, u64 base_gen, u64 gen)
{
	u64 g;

	memset(w->m, 0, sizeof(*w->m));
	for (g = base_gen + 1; g <= gen; g++)
		transaction_ops(w, g);
}

/*
 * Compare the workload's part of the fs tree with the model; returns the
 * number of differences.
 */
static int compare_tree(struct workload *w, struct mfs_root *root, u32 *nitems)
{
	struct model *m = w->m;
	struct mfs_key k = marker_key;
	struct mfs_path path;
	u32 next = 0, seen = 0;
	int bad = 0, ret;

	mfs_init_path(&path);
	ret = mfs_search_forward(root, &k, &path);
	while (ret == 0 && bad < 20) {
		struct extent_buffer *leaf = path.nodes[0];
		int s = path.slots[0], slot;
		u32 size = leaf_item_size(leaf, s);
		struct mfs_key want;

		leaf_item_key(leaf, s, &k);
		if (k.objectid >= END_OBJECTID)
			break;
		seen++;
		if (k.objectid == marker_key.objectid && k.type == marker_key.type &&
		    k.offset == marker_key.offset) {
			ret = mfs_next_item(root, &path);
			continue;	/* checked by the caller */
		}
		slot = key_slot(&k);
		want = slot_key(slot < 0 ? 0 : slot);
		if (slot < 0 || want.offset != k.offset) {
			fprintf(stderr, "# unexpected key (%llu %u %llu)\n",
				(unsigned long long)k.objectid, k.type,
				(unsigned long long)k.offset);
			bad++;
		} else {
			for (; next < (u32)slot; next++)
				if (m->present[next]) {
					fprintf(stderr, "# slot %u missing\n", next);
					bad++;
				}
			next = slot + 1;
			if (!m->present[slot]) {
				fprintf(stderr, "# slot %u present, the model deleted it\n", slot);
				bad++;
			} else if (size != m->size[slot]) {
				fprintf(stderr, "# slot %u has %u bytes, expected %u\n",
					slot, size, m->size[slot]);
				bad++;
			} else {
				gen_content(slot, m->version[slot], w->buf, size);
				if (memcmp(leaf_item_data(leaf, s), w->buf, size)) {
					fprintf(stderr, "# slot %u content differs\n", slot);
					bad++;
				}
			}
		}
		ret = mfs_next_item(root, &path);
	}
	mfs_release_path(&path);
	if (ret < 0) {
		fprintf(stderr, "# walking the fs tree: %s\n", strerror(-ret));
		bad++;
	}
	for (; next < NSLOTS && bad < 20; next++)
		if (m->present[next]) {
			fprintf(stderr, "# slot %u missing\n", next);
			bad++;
		}
	*nitems = seen;
	return bad;
}

/* Read the marker: 1 if there is none, 0 with the base generation, or -errno. */
static int read_marker(struct mfs_root *root, u64 seed, u64 *base_gen, u64 *scale)
{
	struct mfs_path path;
	struct marker mk;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(NULL, root, &marker_key, &path, 0, 0);
	if (ret == 0) {
		if (leaf_item_size(path.nodes[0], path.slots[0]) != sizeof(mk)) {
			ret = -EUCLEAN;
		} else {
			memcpy(&mk, leaf_item_data(path.nodes[0], path.slots[0]), sizeof(mk));
			if (le64_to_cpu(mk.magic) != MARKER_MAGIC ||
			    le64_to_cpu(mk.seed) != seed)
				ret = -EUCLEAN;
			*base_gen = le64_to_cpu(mk.base_gen);
			*scale = le64_to_cpu(mk.scale);
		}
	}
	mfs_release_path(&path);
	return ret;
}

/* Set the model to the state committed as the fs's current generation. */
static int load_model(struct workload *w, struct mfs_fs_info *fs)
{
	u64 base_gen = 0, scale = w->scale;
	int ret = read_marker(fs->fs_root, w->seed, &base_gen, &scale);

	if (ret < 0) {
		fprintf(stderr, "# marker item: %s\n", strerror(-ret));
		return ret;
	}
	if (ret == 0 && base_gen >= fs->generation) {
		fprintf(stderr, "# marker names base generation %llu, fs has %llu\n",
			(unsigned long long)base_gen, (unsigned long long)fs->generation);
		return -EUCLEAN;
	}
	set_scale(w, scale);
	/* no marker: the workload has not committed yet, the model is empty */
	model_replay(w, base_gen, ret ? base_gen : fs->generation);
	return 0;
}

static int open_fs(char **paths, int npaths, unsigned int flags, struct mfs_fs_info **fs)
{
	struct mfs_open_ctl ctl = {
		.paths = (const char * const *)paths,
		.npaths = npaths,
		.flags = flags,
		.sb_mirror = -1,
	};
	int ret = mfs_open_fs(&ctl, fs);

	if (ret)
		fprintf(stderr, "# cannot open the filesystem: %s\n", strerror(-ret));
	return ret;
}

static int cmd_run(struct workload *w, int ntrans, char **paths, int npaths)
{
	struct mfs_fs_info *fs;
	u32 nitems;
	int i, ret;

	ret = open_fs(paths, npaths, MFS_OPEN_WRITABLE, &fs);
	if (ret)
		return 1;
	w->root = fs->fs_root;
	w->max_item = max_item_size(fs);
	ret = load_model(w, fs);
	if (!ret && compare_tree(w, fs->fs_root, &nitems)) {
		fprintf(stderr, "# the fs tree does not match the model before the run\n");
		ret = -EUCLEAN;
	}
	for (i = 0; i < ntrans && !ret; i++) {
		ret = mfs_start_transaction(fs, &w->trans);
		if (ret)
			break;
		ret = transaction_ops(w, w->trans->transid);
		if (ret) {
			mfs_end_transaction(w->trans);
			break;
		}
		ret = mfs_commit_transaction(w->trans);
		if (ret)
			fprintf(stderr, "btree-workload: commit: %s\n", strerror(-ret));
	}
	w->trans = NULL;
	if (ret) {
		mfs_free_fs_info(fs);
		return 1;
	}
	return mfs_close_fs(fs) ? 1 : 0;
}

struct report {
	bool stale_ok;
	u64 tolerated;
};

/* The fs tree checker's word for an objectid of the workload's. */
static bool workload_objectid_problem(const char *msg)
{
	unsigned long long ino;
	int end = 0;

	return sscanf(msg, "inode %llu has items but no inode item%n", &ino, &end) == 1 &&
	       end > 0 && ino >= marker_key.objectid && ino < END_OBJECTID;
}

static void report(void *arg, const char *msg)
{
	struct report *r = arg;

	if (workload_objectid_problem(msg)) {
		r->tolerated++;
		return;
	}
	/* a crash between the superblock writes of a commit leaves older copies */
	if (r->stale_ok && strstr(msg, ") has generation ")) {
		r->tolerated++;
		fprintf(stderr, "# check (tolerated): %s\n", msg);
		return;
	}
	fprintf(stderr, "# check: %s\n", msg);
}

/* Every phase of `mfs check`, data checksums included. */
static int run_checker(struct mfs_fs_info *fs, bool stale_ok)
{
	struct report r = { .stale_ok = stale_ok };
	struct mfs_check_ctl ctl = { .report = report, .arg = &r };
	int ret;

	ret = mfs_check_supers(fs, &ctl);
	if (!ret)
		ret = mfs_check_chunks(fs, &ctl);
	if (!ret)
		ret = mfs_check_trees(fs, &ctl);
	if (!ret)
		ret = mfs_check_extents(fs, &ctl);
	if (!ret)
		ret = mfs_check_fs_tree(fs, &ctl);
	if (!ret)
		ret = mfs_check_data_csums(fs, &ctl);
	mfs_check_free(&ctl);
	if (ret) {
		fprintf(stderr, "# check aborted: %s\n", strerror(-ret));
		return 1;
	}
	return ctl.errors > r.tolerated;
}

static int cmd_verify(struct workload *w, bool stale_ok, char **paths, int npaths)
{
	struct mfs_fs_info *fs;
	u32 nitems = 0;
	int bad, meta_chunks = 0, i;

	if (open_fs(paths, npaths, 0, &fs))
		return 1;
	w->max_item = max_item_size(fs);
	bad = load_model(w, fs) != 0;
	if (!bad)
		bad = compare_tree(w, fs->fs_root, &nitems) != 0;
	if (run_checker(fs, stale_ok))
		bad = 1;
	for (i = 0; i < fs->nr_bgs; i++)
		meta_chunks += !!(fs->bgs[i]->flags & MFS_BLOCK_GROUP_METADATA);
	printf("generation %llu items %u metadata_chunks %d\n",
	       (unsigned long long)fs->generation, nitems, meta_chunks);
	mfs_free_fs_info(fs);
	return bad;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: btree-workload run SEED TRANSACTIONS PATH...\n"
		"       btree-workload verify [--stale-supers-ok] SEED PATH...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static struct model model;
	struct workload w = { .m = &model };
	bool stale_ok = false;
	int ret;

	w.buf = malloc(SZ_64K);
	if (!w.buf)
		return 1;
	set_scale(&w, getenv("MFS_WORKLOAD_SCALE") ?
		  strtoull(getenv("MFS_WORKLOAD_SCALE"), NULL, 0) : 1);
	if (argc >= 5 && strcmp(argv[1], "run") == 0) {
		w.seed = strtoull(argv[2], NULL, 0);
		ret = cmd_run(&w, atoi(argv[3]), argv + 4, argc - 4);
	} else if (argc >= 4 && strcmp(argv[1], "verify") == 0) {
		int a = 2;

		if (strcmp(argv[a], "--stale-supers-ok") == 0) {
			stale_ok = true;
			a++;
		}
		if (argc - a < 2)
			usage();
		w.seed = strtoull(argv[a], NULL, 0);
		ret = cmd_verify(&w, stale_ok, argv + a + 1, argc - a - 1);
	} else {
		usage();
	}
	free(w.buf);
	return ret;
}
