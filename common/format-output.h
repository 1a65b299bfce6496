/* json-c helpers for --format json: {"__header": {"version": "1"}, "<name>": [...]} */
#ifndef MFS_COMMON_FORMAT_OUTPUT_H
#define MFS_COMMON_FORMAT_OUTPUT_H

#include <json-c/json.h>

#include "kernel-shared/format/kerncompat.h"

/*
 * Start a document whose payload is the array "<name>"; *array gets it.
 * Returns the root, or NULL when out of memory.
 */
struct json_object *mfs_json_start(const char *name, struct json_object **array);
/* Append a new empty object to @array; NULL when out of memory. */
struct json_object *mfs_json_array_add_object(struct json_object *array);

/* Byte counts and counters are 64-bit: never json_object_new_int(). */
void mfs_json_add_u64(struct json_object *obj, const char *key, u64 value);
void mfs_json_add_s64(struct json_object *obj, const char *key, s64 value);
void mfs_json_add_string(struct json_object *obj, const char *key,
			 const char *value);

/* Add a new empty object or array under @key of @obj; NULL when out of memory. */
struct json_object *mfs_json_add_object(struct json_object *obj, const char *key);
struct json_object *mfs_json_add_array(struct json_object *obj, const char *key);
/* A ratio such as 2.00, with two decimals as the text output shows it. */
void mfs_json_add_ratio(struct json_object *obj, const char *key, double value);

/* Print the document to stdout (pretty, spaced, "/" unescaped) and free it. */
void mfs_json_print_free(struct json_object *root);

#endif
