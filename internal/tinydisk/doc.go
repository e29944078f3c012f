// Package tinydisk gives tests a small file system to fill: a tmpfs of a
// chosen size mounted on a temporary directory (root only; the test is
// skipped elsewhere), and a way to fill it to the last byte or leave a
// chosen number of bytes free. It is how the disk-full tests of the log
// store and of the serve process make ENOSPC happen where they want it.
package tinydisk
