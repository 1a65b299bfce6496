/* Every command group and top-level command of the mfs binary. */
#ifndef MFS_CMDS_COMMANDS_H
#define MFS_CMDS_COMMANDS_H

#include "common/help.h"
#include "kernel-shared/format/kerncompat.h"

extern const struct cmd_struct cmd_struct_filesystem;
extern const struct cmd_struct cmd_struct_device;
extern const struct cmd_struct cmd_struct_inspect;
extern const struct cmd_struct cmd_struct_check;
extern const struct cmd_struct cmd_struct_mkfs;
extern const struct cmd_struct cmd_struct_mount;
extern const struct cmd_struct cmd_struct_balance;
extern const struct cmd_struct cmd_struct_replace;
extern const struct cmd_struct cmd_struct_scrub;
extern const struct cmd_struct cmd_struct_device_replace;
#define cmd_struct_balance_group (cmd_struct_balance)
extern const struct cmd_struct cmd_struct_umount;
extern const struct cmd_struct cmd_struct_monitor;
extern const struct cmd_struct cmd_struct_restore;
extern const struct cmd_struct cmd_struct_rescue;

int cmd_mkfs_main(int argc, char **argv);
/* check as fsck.mfs: fsck(8) exit codes and options */
int cmd_fsck_main(int argc, char **argv);
/* mount.mfs as run by mount(8) */
int cmd_mount_helper_main(int argc, char **argv);
int cmd_umount_helper_main(int argc, char **argv);

/* cmds/mount.c: the mounted filesystem's writes committed, 0 or -errno */
int mfs_sync_mount(const char *mnt);
/* The names of the device error counters, by MFS_DEV_STAT_* (cmds/stats.c). */
extern const char * const mfs_dev_stat_names[];
/* A member's state by MFS_DEV_HEALTH_* ("ok", "missing", ...; cmds/health.c). */
const char *mfs_dev_health_name(u64 state);
/* Missing or failing: what show --check and device ready report. */
bool mfs_dev_health_bad(u64 state);

#endif
