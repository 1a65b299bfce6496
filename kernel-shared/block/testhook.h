/*
 * Test hooks: named points where a test can hold an operation until it
 * lets it go, so that it acts on the operation in a known state instead of
 * racing it with delays.
 */
#ifndef MFS_TESTHOOK_H
#define MFS_TESTHOOK_H

/*
 * MFS_TEST_PAUSE_AT="POINT:FILE[,POINT:FILE...]" (read once per process)
 * names a control FILE for each point. While FILE is absent the point is
 * passed. A test arms it by writing a number N into FILE: the Nth arrival
 * at POINT from then on (each earlier one counts N down) renames FILE to
 * FILE.held and waits there until FILE.held is removed (or FILE's
 * directory is gone: the test is over). Without the variable a point costs
 * one comparison.
 */
void mfs_test_pause_at(const char *point);

#endif
