/* json-c helpers giving every --format json output the same header and layout. */
#include <stdio.h>

#include "common/format-output.h"

struct json_object *mfs_json_start(const char *name, struct json_object **array)
{
	struct json_object *root, *header;

	root = json_object_new_object();
	header = json_object_new_object();
	*array = json_object_new_array();
	if (!root || !header || !*array) {
		json_object_put(root);
		json_object_put(header);
		json_object_put(*array);
		*array = NULL;
		return NULL;
	}
	json_object_object_add(header, "version", json_object_new_string("1"));
	json_object_object_add(root, "__header", header);
	json_object_object_add(root, name, *array);
	return root;
}

struct json_object *mfs_json_array_add_object(struct json_object *array)
{
	struct json_object *obj = json_object_new_object();

	if (obj && json_object_array_add(array, obj)) {
		json_object_put(obj);
		return NULL;
	}
	return obj;
}

void mfs_json_add_u64(struct json_object *obj, const char *key, u64 value)
{
	json_object_object_add(obj, key, json_object_new_uint64(value));
}

void mfs_json_add_s64(struct json_object *obj, const char *key, s64 value)
{
	json_object_object_add(obj, key, json_object_new_int64(value));
}

void mfs_json_add_string(struct json_object *obj, const char *key,
			 const char *value)
{
	json_object_object_add(obj, key, json_object_new_string(value));
}

struct json_object *mfs_json_add_object(struct json_object *obj, const char *key)
{
	struct json_object *o = json_object_new_object();

	if (o)
		json_object_object_add(obj, key, o);
	return o;
}

struct json_object *mfs_json_add_array(struct json_object *obj, const char *key)
{
	struct json_object *a = json_object_new_array();

	if (a)
		json_object_object_add(obj, key, a);
	return a;
}

void mfs_json_add_ratio(struct json_object *obj, const char *key, double value)
{
	char text[32];

	snprintf(text, sizeof(text), "%.2f", value);
	json_object_object_add(obj, key, json_object_new_double_s(value, text));
}

void mfs_json_print_free(struct json_object *root)
{
	printf("%s\n", json_object_to_json_string_ext(root,
			JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
			JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(root);
}
