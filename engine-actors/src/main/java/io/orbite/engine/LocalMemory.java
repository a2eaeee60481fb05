package io.orbite.engine;

import io.orbite.engine.registry.Registry;
import io.orbite.engine.spi.SharedAllocation;
import io.orbite.engine.spi.SharedBacking;
import io.orbite.engine.spi.SharedMemory;
import io.orbite.engine.wire.RegionNames;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * A range about to be registered, checked and (for {@code allocate}) allocated on the caller's
 * thread, never in the Registry's mailbox: zeroing a large allocation takes time. If the Registry
 * refuses it, memory the engine allocated is freed again ({@link #answer}).
 */
record LocalMemory(
    MemorySegment segment, Access access, Arena owned, SharedBacking backing, String name) {

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
   * Engine-owned memory: a memfd that same-host peers may map when {@code shared} is not null (page
   * aligned), else zeroed, 64-byte aligned off-heap memory.
   */
  static LocalMemory allocate(
      SharedMemory shared, String label, long bytes, Access access, String name) {
    if (bytes <= 0) {
      throw new TransferException(
          ErrorKind.INVALID_ARGUMENT, "allocate: bytes must be positive, got " + bytes);
    }
    if (access == null) {
      throw new TransferException(ErrorKind.INVALID_ARGUMENT, "allocate: access is null");
    }
    checkName("allocate", name);
    if (shared != null) {
      SharedAllocation allocation = shared.allocate(bytes, label);
      return new LocalMemory(
          allocation.segment(), access, allocation.arena(), allocation.backing(), name);
    }
    Arena arena = Arena.ofShared();
    try {
      return new LocalMemory(arena.allocate(bytes, 64), access, arena, null, name);
    } catch (OutOfMemoryError | IllegalArgumentException e) {
      arena.close();
      throw new TransferException(
          ErrorKind.RESOURCE_EXHAUSTED, "allocate " + bytes + " B: " + e.getMessage(), e);
    }
  }

  /** Caller-owned native memory; the engine never frees it. */
  static LocalMemory callers(MemorySegment range, Access access, String name) {
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
    return new LocalMemory(range, access, null, null, name);
  }

  Registry.Register register(ActorRef<Registry.RegisterReply> replyTo) {
    return new Registry.Register(segment, access, owned, backing, name, replyTo);
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
