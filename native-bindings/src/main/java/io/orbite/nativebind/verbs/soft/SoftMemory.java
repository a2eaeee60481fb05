package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import java.lang.foreign.MemorySegment;
import java.security.SecureRandom;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/**
 * The MRs and memory windows of one device, found by key, and the checks every access makes.
 *
 * <p>Keys: a key's upper 24 bits (its index) are drawn at random, unlike any live key's in this
 * process; its low 8 bits (the key byte) are random. A retired key's index is handed out again only
 * after 4096 later retirements, with its key byte one higher, as a device recycles its indices. An
 * MR's lkey and rkey have distinct indices, so they are distinct and non-zero. A type-2 MW keeps
 * its index for life: a bind must name a {@code newRkey} with the MW's index ({@link Ibv#incRkey}
 * gives one).
 *
 * <p>Local access: an SGE is resolved by lkey in the QP's PD; its range must lie inside the MR, and
 * writing into it (a READ's response, a receive) needs {@code ACCESS_LOCAL_WRITE}; else the WR
 * completes {@code WC_LOC_PROT_ERR}. Remote access by an MR's rkey needs the MR in the target QP's
 * PD, {@code ACCESS_REMOTE_READ} or {@code ACCESS_REMOTE_WRITE} and the range inside the MR. By a
 * bound type-2 MW's rkey: exactly the bound range and rights, and only on the QP the MW was bound
 * on (the one the request arrives at). Everything is checked before a byte is copied. A
 * deregistered MR's keys, and an invalidated or deallocated MW's key, stop working at once. Guarded
 * by the provider's lock.
 */
final class SoftMemory {
  /** A registered range. */
  static final class Region {
    final long handle;
    final SoftPd pd;
    final MemorySegment segment;
    final int lkey;
    final int rkey;
    final int access;
    final Verbs.Mr record;
    int boundWindows;
    boolean live = true;

    Region(long handle, SoftPd pd, MemorySegment segment, int lkey, int rkey, int access) {
      this.handle = handle;
      this.pd = pd;
      this.segment = segment;
      this.lkey = lkey;
      this.rkey = rkey;
      this.access = access;
      this.record =
          new Verbs.Mr(
              handle, pd.record, segment.address(), segment.byteSize(), lkey, rkey, access);
    }
  }

  /** A type-2 memory window and, while bound, what it authorizes. */
  static final class Window {
    final long handle;
    final SoftPd pd;
    final int type;
    int rkey;
    Region region;
    long addr;
    long length;
    int access;
    SoftQp qp;
    boolean live = true;

    Window(long handle, SoftPd pd, int type, int rkey) {
      this.handle = handle;
      this.pd = pd;
      this.type = type;
      this.rkey = rkey;
    }

    boolean bound() {
      return region != null;
    }

    Verbs.Mw record() {
      return new Verbs.Mw(handle, pd.record, type, rkey);
    }

    void unbind() {
      if (region != null) {
        region.boundWindows--;
        region = null;
        qp = null;
      }
    }
  }

  /** Keys' random draws: seeded once from the system (no system call or hash per window). */
  private static final java.util.SplittableRandom RANDOM =
      new java.util.SplittableRandom(new SecureRandom().nextLong());

  /** Indices handed out and not yet retired, or retired and waiting in {@link #RETIRED}. */
  private static final Set<Integer> USED_INDICES = new java.util.HashSet<>();

  /**
   * Retired keys (an index and its last key byte), oldest first: an index is handed out again only
   * once {@link #REUSE_AFTER} others were retired after it, and with its key byte one higher, as a
   * device's {@code ibv_inc_rkey} would, so a stale key is refused until its index came round 256
   * times. Without reuse the 2^24 indices ran out after that many windows (minutes at full rate).
   */
  private static final java.util.ArrayDeque<Integer> RETIRED = new java.util.ArrayDeque<>();

  /** Retired keys held back before their index is handed out again. */
  static final int REUSE_AFTER = 4096;

  /** A fresh key: an index no live key holds, a key byte unlike its index's last one. */
  static synchronized int newKey() {
    if (RETIRED.size() > REUSE_AFTER) {
      int old = RETIRED.poll();
      return (old & ~0xff) | ((old + 1) & 0xff);
    }
    while (true) {
      int index = RANDOM.nextInt(1, 1 << 24);
      if (USED_INDICES.add(index)) {
        return (index << 8) | RANDOM.nextInt(256);
      }
    }
  }

  /** {@code key} stopped working: its index may be handed out again, later, with another byte. */
  static synchronized void retire(int key) {
    RETIRED.add(key);
  }

  private final Map<Integer, Object> byIndex = new HashMap<>();

  Region register(long handle, SoftPd pd, MemorySegment segment, int access) {
    Region r = new Region(handle, pd, segment, newKey(), newKey(), access);
    byIndex.put(r.lkey >>> 8, r);
    byIndex.put(r.rkey >>> 8, r);
    return r;
  }

  void deregister(Region r) {
    r.live = false;
    byIndex.remove(r.lkey >>> 8);
    byIndex.remove(r.rkey >>> 8);
    retire(r.lkey);
    retire(r.rkey);
  }

  Window allocate(long handle, SoftPd pd, int type) {
    Window w = new Window(handle, pd, type, newKey());
    byIndex.put(w.rkey >>> 8, w);
    return w;
  }

  void deallocate(Window w) {
    w.unbind();
    w.live = false;
    byIndex.remove(w.rkey >>> 8);
    retire(w.rkey);
  }

  /** The bytes {@code sge} names in {@code pd}, or null when its lkey, range or rights fail. */
  MemorySegment local(SoftPd pd, Verbs.Sge sge, boolean write) {
    if (!(byIndex.get(sge.lkey() >>> 8) instanceof Region r)
        || r.lkey != sge.lkey()
        || r.pd != pd
        || (write && (r.access & Ibv.ACCESS_LOCAL_WRITE) == 0)) {
      return null;
    }
    return slice(r.segment, sge.addr(), Integer.toUnsignedLong(sge.length()));
  }

  /**
   * The bytes a remote access arriving on {@code target} may touch, or null: {@code need} is
   * ACCESS_REMOTE_READ or ACCESS_REMOTE_WRITE.
   */
  MemorySegment remote(SoftQp target, int rkey, long addr, long length, int need) {
    Object o = byIndex.get(rkey >>> 8);
    if (o instanceof Region r && r.rkey == rkey && r.pd == target.pd && (r.access & need) == need) {
      return slice(r.segment, addr, length);
    }
    if (o instanceof Window w
        && w.rkey == rkey
        && w.bound()
        && w.pd == target.pd
        && w.qp == target
        && (w.access & need) == need
        && inside(w.addr, w.length, addr, length)) {
      return slice(w.region.segment, addr, length);
    }
    return null;
  }

  /** Binds per {@code bind} on {@code qp}: a WC status (WC_SUCCESS or WC_MW_BIND_ERR). */
  int bind(SoftQp qp, Verbs.MwBind bind, Window w, Region r) {
    if (w == null
        || r == null
        || w.type != Ibv.MW_TYPE_2
        || w.bound()
        || w.pd != qp.pd
        || r.pd != qp.pd
        || (r.access & Ibv.ACCESS_MW_BIND) == 0
        || (bind.newRkey() >>> 8) != (w.rkey >>> 8)
        || !inside(r.segment.address(), r.segment.byteSize(), bind.addr(), bind.length())
        || ((bind.access() & (Ibv.ACCESS_REMOTE_WRITE | Ibv.ACCESS_REMOTE_ATOMIC)) != 0
            && (r.access & Ibv.ACCESS_LOCAL_WRITE) == 0)) {
      return Ibv.WC_MW_BIND_ERR;
    }
    w.rkey = bind.newRkey();
    w.region = r;
    w.addr = bind.addr();
    w.length = bind.length();
    w.access = bind.access();
    w.qp = qp;
    r.boundWindows++;
    return Ibv.WC_SUCCESS;
  }

  /** The bound MW of {@code pd} whose key is {@code rkey}, or null. */
  Window boundWindow(SoftPd pd, int rkey) {
    if (byIndex.get(rkey >>> 8) instanceof Window w && w.rkey == rkey && w.bound() && w.pd == pd) {
      return w;
    }
    return null;
  }

  /** Unbinds every MW bound on {@code qp} (the QP is being destroyed). */
  void unbindAll(SoftQp qp) {
    for (Object o : byIndex.values()) {
      if (o instanceof Window w && w.qp == qp) {
        w.unbind();
      }
    }
  }

  private static boolean inside(long base, long size, long addr, long length) {
    long offset = addr - base;
    return length >= 0 && offset >= 0 && offset <= size - length;
  }

  private static MemorySegment slice(MemorySegment segment, long addr, long length) {
    if (!inside(segment.address(), segment.byteSize(), addr, length)) {
      return null;
    }
    return segment.asSlice(addr - segment.address(), length);
  }
}
