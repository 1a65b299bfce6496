/* Every command group and top-level command of the mfs binary. */
#ifndef MFS_CMDS_COMMANDS_H
#define MFS_CMDS_COMMANDS_H

#include "common/help.h"

extern const struct cmd_struct cmd_struct_filesystem;
extern const struct cmd_struct cmd_struct_device;
extern const struct cmd_struct cmd_struct_inspect;
extern const struct cmd_struct cmd_struct_check;
extern const struct cmd_struct cmd_struct_mkfs;

int cmd_mkfs_main(int argc, char **argv);
/* check as fsck.mfs: fsck(8) exit codes and options */
int cmd_fsck_main(int argc, char **argv);

#endif
