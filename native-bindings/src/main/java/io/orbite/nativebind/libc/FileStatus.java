package io.orbite.nativebind.libc;

/**
 * What {@link Libc#fstat} reports about an open file: enough to tell one file from another ({@code
 * device}, {@code inode}) and how large it is.
 *
 * @param device {@code st_dev}
 * @param inode {@code st_ino}: with {@code device}, names the file for as long as it exists
 * @param mode {@code st_mode}: file type and permission bits
 * @param links {@code st_nlink}: hard links (0 for a memfd)
 * @param uid {@code st_uid}
 * @param gid {@code st_gid}
 * @param sizeBytes {@code st_size}
 */
public record FileStatus(
    long device, long inode, int mode, long links, int uid, int gid, long sizeBytes) {}
