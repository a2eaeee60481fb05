package io.orbite.engine.wire;

import io.orbite.engine.Access;

/**
 * One engine-owned allocation a source exports through SHM: the memfd that backs a published
 * region, as a same-host requester opens it ({@code /proc/<pid>/fd/<fd>}) and checks it ({@code
 * inode}), and the range of that file the region covers. A region's access is the region's own.
 */
public record SharedRegion(
    long regionId, int fd, long inode, long offset, long lengthBytes, Access access) {}
