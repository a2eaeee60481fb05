package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.verbs.Verbs;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * The local memory a QP's scatter-gather lists name, resolved against its PD on its device: the
 * bytes a WR sends (gathered), and the segments a READ's answer or an incoming SEND or WRITE lands
 * in (scattered).
 */
final class SoftBuffers {
  private final SoftMemory memory;
  private final SoftPd pd;

  SoftBuffers(SoftMemory memory, SoftPd pd) {
    this.memory = memory;
    this.pd = pd;
  }

  /** The bytes of {@code sgl} in order, or null when an SGE does not resolve for reading. */
  byte[] gather(List<Verbs.Sge> sgl) {
    long total = 0;
    List<MemorySegment> parts = new ArrayList<>();
    for (Verbs.Sge sge : sgl) {
      MemorySegment s = memory.local(pd, sge, false);
      if (s == null) {
        return null;
      }
      parts.add(s);
      total += s.byteSize();
    }
    if (total > SoftWire.MAX_PAYLOAD) {
      return null;
    }
    byte[] bytes = new byte[(int) total];
    int at = 0;
    for (MemorySegment s : parts) {
      MemorySegment.copy(s, ValueLayout.JAVA_BYTE, 0, bytes, at, (int) s.byteSize());
      at += (int) s.byteSize();
    }
    return bytes;
  }

  /**
   * The byte count of {@code sgl} when every SGE resolves for reading and the total fits a message
   * (what {@link #gather} accepts), else -1; nothing is copied.
   */
  long readableLength(List<Verbs.Sge> sgl) {
    long total = 0;
    for (Verbs.Sge sge : sgl) {
      MemorySegment s = memory.local(pd, sge, false);
      if (s == null) {
        return -1;
      }
      total += s.byteSize();
    }
    return total > SoftWire.MAX_PAYLOAD ? -1 : total;
  }

  /** The local segments {@code sgl} names for writing, or null when one does not resolve. */
  List<MemorySegment> targets(List<Verbs.Sge> sgl) {
    List<MemorySegment> parts = new ArrayList<>();
    for (Verbs.Sge sge : sgl) {
      MemorySegment s = memory.local(pd, sge, true);
      if (s == null) {
        return null;
      }
      parts.add(s);
    }
    return parts;
  }

  /** Copies the first {@code count} bytes of {@code bytes} across {@code parts}, in order. */
  static void scatter(byte[] bytes, int count, List<MemorySegment> parts) {
    int at = 0;
    for (MemorySegment s : parts) {
      if (at >= count) {
        return;
      }
      int n = (int) Math.min(s.byteSize(), count - at);
      MemorySegment.copy(bytes, at, s, ValueLayout.JAVA_BYTE, 0, n);
      at += n;
    }
  }

  static long capacity(List<MemorySegment> parts) {
    long n = 0;
    for (MemorySegment s : parts) {
      n += s.byteSize();
    }
    return n;
  }
}
