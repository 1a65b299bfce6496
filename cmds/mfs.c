/* main(): pick the command by argv[0] (mfs and the helper names) and dispatch. */
#include <string.h>
#include <libgen.h>
#include "cmds/commands.h"

static const char * const mfs_usage[] = {
	"mfs [--help] [--version] [--format <format>] [-v|--verbose] [-q|--quiet] <group> [<group>...] <command> [<args>]",
	NULL
};

static const struct cmd_group mfs_cmd_group = {
	mfs_usage,
	"Use --help as an argument for information on a specific group or command.",
	{
		&cmd_struct_filesystem,
		&cmd_struct_device,
		&cmd_struct_balance,
		&cmd_struct_replace,
		&cmd_struct_scrub,
		&cmd_struct_check,
		&cmd_struct_rescue,
		&cmd_struct_restore,
		&cmd_struct_monitor,
		&cmd_struct_inspect,
		&cmd_struct_mkfs,
		&cmd_struct_mount,
		&cmd_struct_umount,
		&cmd_struct_help,
		&cmd_struct_version,
		NULL
	}
};

int main(int argc, char **argv)
{
	const char *name = basename(argv[0]);

	if (strcmp(name, "mkfs.mfs") == 0)
		return cmd_mkfs_main(argc, argv);
	if (strcmp(name, "fsck.mfs") == 0)
		return cmd_fsck_main(argc, argv);
	if (strcmp(name, "mount.mfs") == 0)
		return cmd_mount_helper_main(argc, argv);
	if (strcmp(name, "umount.fuse.mfs") == 0)
		return cmd_umount_helper_main(argc, argv);
	return mfs_dispatch(&mfs_cmd_group, "mfs", argc, argv);
}
