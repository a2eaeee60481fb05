package io.orbite.engine;

import io.orbite.config.EngineConfig;
import io.orbite.engine.registry.Registry;
import io.orbite.engine.spi.SharedAllocation;
import io.orbite.engine.spi.SharedBacking;
import io.orbite.engine.spi.SharedMemory;
import io.orbite.engine.wire.RegionNames;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * A range about to be registered, checked and (for {@code allocate}) allocated on the caller's
 * thread, never in the Registry's mailbox: zeroing a large allocation takes time. If the Registry
 * refuses it, memory the engine allocated is freed again ({@link #answer}).
 */
record LocalMemory(
    MemorySegment segment,
    Access access,
    Arena owned,
    SharedBacking backing,
    String name,
    Set<String> allowedPeers) {
  private static final Pattern ENGINE_NAME = Pattern.compile(EngineConfig.NAME_REGEX);

  /**
   * Fails INVALID_ARGUMENT, naming {@code call} and what is wrong, unless {@code name} is null (an
   * unnamed range) or a region name ({@link RegionNames}).
   */
  static void checkName(String call, String name) {
    String invalid = name == null ? null : RegionNames.invalidBecause(name);
    if (invalid != null) {
      throw new TransferException(ErrorKind.INVALID_ARGUMENT, call + ": " + invalid);
    }
  }

  /**
   * The allow-list to register, copied, or null for none. Fails INVALID_ARGUMENT, naming {@code
   * call} and what is wrong, for more than {@link TransferEngine#MAX_ALLOWED_PEERS} names, a null,
   * a name that is not an engine name, or a non-empty list where peers do not prove their names
   * (then no peer could ever match it: a shared secret proves membership, not a name). An empty
   * list needs no proof: it admits nobody.
   *
   * @param namesProven whether this engine's handshake proves its peers' names
   */
  static Set<String> checkAllowedPeers(String call, Set<String> allowedPeers, boolean namesProven) {
    if (allowedPeers == null) {
      return null;
    }
    // The copy is what is checked and kept: a caller's set changed meanwhile slips nothing past.
    List<String> names = new ArrayList<>(allowedPeers);
    if (names.size() > TransferEngine.MAX_ALLOWED_PEERS) {
      throw new TransferException(
          ErrorKind.INVALID_ARGUMENT,
          call
              + ": allowedPeers holds "
              + names.size()
              + " names; at most "
              + TransferEngine.MAX_ALLOWED_PEERS);
    }
    for (String peer : names) {
      if (peer == null) {
        throw new TransferException(
            ErrorKind.INVALID_ARGUMENT, call + ": allowedPeers holds a null name");
      }
      if (!ENGINE_NAME.matcher(peer).matches()) {
        String shown = peer.length() > 80 ? peer.substring(0, 80) + "..." : peer;
        throw new TransferException(
            ErrorKind.INVALID_ARGUMENT,
            call
                + ": allowedPeers holds '"
                + shown
                + "', which is not an engine name (must match "
                + EngineConfig.NAME_REGEX
                + ")");
      }
    }
    if (!names.isEmpty() && !namesProven) {
      throw new TransferException(
          ErrorKind.INVALID_ARGUMENT,
          call
              + ": allow-lists need proven peer names: configure security.identityKeyFile and"
              + " security.peerKeysDir, or mutual TLS (security.tlsKeyStore)");
    }
    return Set.copyOf(names);
  }

  /**
   * Engine-owned memory: a memfd that same-host peers may map when {@code shared} is not null (page
   * aligned), else zeroed, 64-byte aligned off-heap memory.
   */
  static LocalMemory allocate(
      SharedMemory shared,
      String label,
      long bytes,
      Access access,
      String name,
      Set<String> allowedPeers,
      boolean namesProven) {
    if (bytes <= 0) {
      throw new TransferException(
          ErrorKind.INVALID_ARGUMENT, "allocate: bytes must be positive, got " + bytes);
    }
    if (access == null) {
      throw new TransferException(ErrorKind.INVALID_ARGUMENT, "allocate: access is null");
    }
    checkName("allocate", name);
    Set<String> peers = checkAllowedPeers("allocate", allowedPeers, namesProven);
    if (shared != null) {
      SharedAllocation allocation = shared.allocate(bytes, label);
      return new LocalMemory(
          allocation.segment(), access, allocation.arena(), allocation.backing(), name, peers);
    }
    Arena arena = Arena.ofShared();
    try {
      return new LocalMemory(arena.allocate(bytes, 64), access, arena, null, name, peers);
    } catch (OutOfMemoryError | IllegalArgumentException e) {
      arena.close();
      throw new TransferException(
          ErrorKind.RESOURCE_EXHAUSTED, "allocate " + bytes + " B: " + e.getMessage(), e);
    }
  }

  /** Caller-owned native memory; the engine never frees it. */
  static LocalMemory callers(
      MemorySegment range,
      Access access,
      String name,
      Set<String> allowedPeers,
      boolean namesProven) {
    if (range == null || access == null) {
      throw new TransferException(
          ErrorKind.INVALID_ARGUMENT, "register: range and access must not be null");
    }
    if (!range.isNative()) {
      throw new TransferException(
          ErrorKind.INVALID_ARGUMENT,
          "register: heap segments cannot be registered; use off-heap (native) memory");
    }
    if (range.byteSize() == 0) {
      throw new TransferException(ErrorKind.INVALID_ARGUMENT, "register: range is empty");
    }
    checkName("register", name);
    Set<String> peers = checkAllowedPeers("register", allowedPeers, namesProven);
    return new LocalMemory(range, access, null, null, name, peers);
  }

  Registry.Register register(ActorRef<Registry.RegisterReply> replyTo) {
    return new Registry.Register(segment, access, owned, backing, name, allowedPeers, replyTo);
  }

  /** The registered range, or the refusal (engine-allocated memory freed first). */
  RegisteredMemory answer(Registry.RegisterReply reply) {
    return switch (reply) {
      case Registry.Registered r -> r.memory();
      case Registry.RegisterRefused r -> {
        if (owned != null) {
          owned.close();
        }
        // Engine-owned memory comes only from allocate.
        throw new TransferException(
            r.kind(), (owned != null ? "allocate: " : "register: ") + r.detail());
      }
    };
  }
}
