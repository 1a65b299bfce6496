# the root directory's DIR_INDEX entry for "data" renamed "../x": a name
# that is a path. A crafted image with such an entry made restore write
# outside its target (tests/fuzz/regress/restore-name-dotdot); readdir now
# stops there with EUCLEAN, and the check names it.
EXPECT="dir 256 entry '\.\./x': invalid name"
REPAIR=no
damage() {
	corrupt set fs 256 DIR_INDEX "$(dir_index_of "$W/img1" 256 data)" name ../x
}
