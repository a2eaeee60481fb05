package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.verbs.Verbs;
import java.util.List;

/**
 * The far end of a {@link VerbsConformance} test: a provider the local one reaches only over the
 * wire, driven through this small interface (so it can live in another process or namespace). Every
 * call blocks until done and throws {@link AssertionError} when the far end refused it.
 */
interface ConformancePeer extends AutoCloseable {
  /** A buffer the peer registered: its id there, and what the local end needs to reach it. */
  record Buffer(int id, long addr, int rkey, int length) {}

  /** The GID of the peer's device. */
  Verbs.Gid gid();

  /** A new RC QP in INIT; its number. */
  int createQp();

  /**
   * Moves QP {@code qpn} to RTS connected to {@code remoteQpn} at {@code remoteGid}, with an RNR
   * timer of 10 us.
   */
  void connect(int qpn, Verbs.Gid remoteGid, int remoteQpn);

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
