package io.orbite.engine.wire;

import java.util.Objects;

/**
 * What a same-host peer needs to reach an engine incarnation's shared memory, published in Describe
 * when the engine exports memory through SHM: the host identity (so the requester can tell it
 * shares the kernel), and the engine's incarnation token, a small memfd holding the epoch on which
 * the engine keeps a liveness lock for as long as it runs.
 *
 * @param hostname the source's host name (of its UTS namespace)
 * @param bootId the source's kernel boot id
 * @param pid the source's process id (in its PID namespace): the token and every allocation are
 *     opened as {@code /proc/<pid>/fd/<fd>}
 * @param tokenFd the token memfd's descriptor number in the source process
 * @param tokenInode the token's inode, so a requester can tell it opened that very file
 */
public record SharedHost(String hostname, String bootId, int pid, int tokenFd, long tokenInode) {
  public SharedHost {
    Objects.requireNonNull(hostname, "hostname");
    Objects.requireNonNull(bootId, "bootId");
  }
}
