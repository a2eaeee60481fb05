package io.orbite.transport.file;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.Receipts;
import io.orbite.engine.spi.TaskWork;
import io.orbite.transport.lane.Unsendable;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The data plane of one open file: cuts each task into chunks of at most {@code file.maxChunkBytes}
 * and queues them on the ring lanes, round robin, skipping quarantined lanes. One receipt per
 * chunk. Thread-safe; submitting threads call it.
 */
final class FileSegmentChannel implements PeerChannel {
  private final SegmentDescriptor self;
  private final FileHandle file;
  private final List<RingLane> lanes;
  private final long maxChunkBytes;
  private final AtomicInteger next = new AtomicInteger();

  FileSegmentChannel(
      SegmentDescriptor self, FileHandle file, List<RingLane> lanes, long maxChunkBytes) {
    this.self = self;
    this.file = file;
    this.lanes = lanes;
    this.maxChunkBytes = maxChunkBytes;
  }

  FileHandle file() {
    return file;
  }

  @Override
  public SegmentDescriptor peer() {
    return self;
  }

  @Override
  public Transport transport() {
    return Transport.FILE;
  }

  @Override
  public int dispatch(TaskWork work) {
    boolean write = work.op() == Op.WRITE;
    long length = work.lengthBytes();
    int chunks = (int) ((length + maxChunkBytes - 1) / maxChunkBytes);
    List<Receipt> refused = new ArrayList<>();
    for (int c = 0; c < chunks; c++) {
      long at = c * maxChunkBytes;
      long n = Math.min(maxChunkBytes, length - at);
      RingLane lane = pickLane();
      String refusal =
          lane == null
              ? "every file ring lane is quarantined or closing"
              : !file.acquire() ? file.gate().refusal() + "; open the segment again" : null;
      if (refusal == null
          && !lane.offer(
              new FileOp(
                  work.sink(),
                  work.taskIndex(),
                  write,
                  file,
                  work.local().asSlice(work.localOffset() + at, n),
                  work.remoteOffset() + at,
                  work.deadlineNanos()))) {
        file.release(); // the lane ended between the pick and the offer
        refusal = Unsendable.neverSent("file ring lane " + lane.name() + " has ended");
      }
      if (refusal != null) {
        refused.add(
            Receipt.failed(work.taskIndex(), ErrorKind.UNAVAILABLE, RemoteEffect.NONE, refusal));
      }
    }
    if (!refused.isEmpty()) {
      // Delivered as a message to the batch, so it arrives after the batch recorded what is owed.
      work.sink().deliver(Receipts.of(refused));
    }
    return chunks;
  }

  private RingLane pickLane() {
    int size = lanes.size();
    for (int i = 0; i < size; i++) {
      RingLane lane = lanes.get(Math.floorMod(next.getAndIncrement(), size));
      if (lane.running()) {
        return lane;
      }
    }
    return null;
  }

  @Override
  public void flush() {
    for (RingLane lane : lanes) {
      lane.wakeIfQueued();
    }
  }

  @Override
  public ChannelGate gate() {
    return file.gate();
  }

  /** A file segment has no peer incarnation to be replaced; a fence retires it all the same. */
  @Override
  public void fence(long newerEpoch, String reason) {
    file.gate().fence(newerEpoch, reason);
    file.retire(reason);
  }
}
