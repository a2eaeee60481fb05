package io.orbite.nativebind.verbs;

import java.util.List;

/**
 * The far end of a conformance test: a provider the local end reaches only over the wire, driven
 * through this small interface (so it can live in another process or namespace). Every call blocks
 * until done and throws {@link AssertionError} when the far end refused it.
 */
public interface ConformancePeer extends AutoCloseable {
  /** A buffer the peer registered: its id there, and what the local end needs to reach it. */
  record Buffer(int id, long addr, int rkey, int length) {}

  /** The GID of the peer's port (at its GID index). */
  Verbs.Gid gid();

  /** The LID of the peer's port: what an InfiniBand address vector names; 0 on a soft port. */
  int lid();

  /** The active MTU of the peer's port ({@link Ibv#MTU_4096}...). */
  int activeMtu();

  /** A new RC QP in INIT; its number. */
  int createQp();

  /**
   * Moves QP {@code qpn} to RTS connected to QP {@code remoteQpn} of the port with {@code
   * remoteGid}, {@code remoteLid} and {@code remoteMtu} (the path MTU is the smaller of both
   * ports'), with an RNR timer of 10 us and unlimited RNR retries.
   */
  void connect(int qpn, Verbs.Gid remoteGid, int remoteLid, int remoteMtu, int remoteQpn);

  /** Connects QP {@code qpn} to QP {@code remoteQpn} of {@code remote}. */
  default void connect(int qpn, ConformancePeer remote, int remoteQpn) {
    connect(qpn, remote.gid(), remote.lid(), remote.activeMtu(), remoteQpn);
  }

  /** Registers {@code length} bytes filled with {@code fill}, with {@code access}. */
  Buffer register(int length, int access, byte fill);

  /** Writes {@code bytes} into its own buffer at {@code offset} (host memory, no verbs). */
  void write(Buffer buffer, int offset, byte[] bytes);

  /** The bytes of its buffer now. */
  byte[] read(Buffer buffer);

  /** Deregisters the buffer's MR. */
  void deregister(Buffer buffer);

  /** Posts a receive of {@code length} bytes at {@code offset} of the buffer on QP {@code qpn}. */
  void postRecv(int qpn, long wrId, Buffer buffer, int offset, int length);

  /**
   * Allocates a type-2 MW and binds it on QP {@code qpn} to {@code length} bytes at {@code offset}
   * of the buffer with {@code access}; the MW's rkey.
   */
  int bindMw(int qpn, Buffer buffer, int offset, int length, int access);

  /** Posts LOCAL_INV of {@code rkey} on QP {@code qpn}; the status its completion has. */
  int localInvalidate(int qpn, int rkey);

  /** Waits (5 s at most) for {@code n} receive completions of QP {@code qpn}, in order. */
  List<Verbs.Wc> recvCompletions(int qpn, int n);

  /** The state of QP {@code qpn}. */
  int qpState(int qpn);

  /** Destroys QP {@code qpn} (its connections close). */
  void destroyQp(int qpn);

  /** Releases everything. */
  @Override
  void close();
}
