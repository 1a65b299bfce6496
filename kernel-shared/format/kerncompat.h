/* Basic types and little-endian helpers shared by the engine and the tools. */
#ifndef MFS_KERNCOMPAT_H
#define MFS_KERNCOMPAT_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include <endian.h>
#include <errno.h>
#include <stdlib.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t s64;

/* On-disk little-endian types: only touched through the accessors below. */
typedef struct { uint16_t v; } __attribute__((packed)) mfs_le16;
typedef struct { uint32_t v; } __attribute__((packed)) mfs_le32;
typedef struct { uint64_t v; } __attribute__((packed)) mfs_le64;

static inline u16 le16_to_cpu(mfs_le16 x) { return le16toh(x.v); }
static inline u32 le32_to_cpu(mfs_le32 x) { return le32toh(x.v); }
static inline u64 le64_to_cpu(mfs_le64 x) { return le64toh(x.v); }
static inline mfs_le16 cpu_to_le16(u16 x) { mfs_le16 r = { htole16(x) }; return r; }
static inline mfs_le32 cpu_to_le32(u32 x) { mfs_le32 r = { htole32(x) }; return r; }
static inline mfs_le64 cpu_to_le64(u64 x) { mfs_le64 r = { htole64(x) }; return r; }

#ifndef EUCLEAN
#define EUCLEAN 117
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define SZ_1K  1024ULL
#define SZ_4K  (4 * SZ_1K)
#define SZ_16K (16 * SZ_1K)
#define SZ_64K (64 * SZ_1K)
#define SZ_1M  (1024 * SZ_1K)
#define SZ_8M  (8 * SZ_1M)
#define SZ_32M (32 * SZ_1M)
#define SZ_64M (64 * SZ_1M)
#define SZ_256M (256 * SZ_1M)
#define SZ_1G  (1024 * SZ_1M)

#define min_t(t, a, b) ((t)(a) < (t)(b) ? (t)(a) : (t)(b))
#define max_t(t, a, b) ((t)(a) > (t)(b) ? (t)(a) : (t)(b))
#define round_up(x, a) ((((x) + (a) - 1) / (a)) * (a))
#define round_down(x, a) (((x) / (a)) * (a))
#define div_round_up(x, a) (((x) + (a) - 1) / (a))

#define __unused __attribute__((unused))

/*
 * Room for one more element in a growable array arr holding nr of max
 * elements: max doubles (from first) when the array is full. 0, or
 * -ENOMEM with the array as it was. The one copy of the growth code.
 */
#define MFS_ARRAY_RESERVE(arr, nr, max, first) ({				\
	int __ret = 0;								\
	if ((nr) >= (max)) {							\
		__typeof__(max) __nmax = (max) ? (max) * 2 : (first);		\
		void *__p = realloc((arr), __nmax * sizeof(*(arr)));		\
		if (__p) {							\
			(arr) = __p;						\
			(max) = __nmax;						\
		} else {							\
			__ret = -ENOMEM;					\
		}								\
	}									\
	__ret;									\
})

#endif
