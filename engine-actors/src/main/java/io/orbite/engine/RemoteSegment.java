package io.orbite.engine;

import io.orbite.engine.spi.PeerSegment;
import java.util.List;
import java.util.Optional;

/**
 * An opened peer: its identity (endpoint and epoch, as Describe answered) and the ranges it
 * published then; or a local file opened with {@link TransferEngine#openFileSegment}. Requests name
 * a region of it; the peer re-checks authority on every request, so a snapshot never grants more
 * than the live registration (C2).
 *
 * <p>Every opened peer is reached over TCP. A peer on the same host that exports memory through
 * SHM, and whose memory this engine proved it can open, is also reached over SHM: a request with
 * {@code Transport.UNSPEC} uses SHM for a region the peer exports ({@link #sharedReachable}), TCP
 * otherwise.
 *
 * <p>Each RemoteSegment is a reference to its peer's entry in the engine's bounded segment table
 * (C9): the entry, and its endpoint charge, are reclaimed only once no RemoteSegment refers to it
 * and its peer incarnation is fenced or gone. {@link #close()} drops the reference at once; a
 * RemoteSegment that becomes unreachable drops it when the garbage collector notices. Sealed: only
 * the engine makes them.
 */
public sealed interface RemoteSegment extends AutoCloseable permits PeerSegment {
  /**
   * Drops this reference to the peer's table entry; later submissions naming it are refused
   * (INVALID_ARGUMENT). Tasks already admitted are not affected. Idempotent.
   */
  @Override
  void close();

  /**
   * Whether {@link #close()} was called.
   *
   * @return true once this segment, or a copy sharing its table reference, was closed
   */
  boolean isClosed();

  /**
   * The incarnation this segment names.
   *
   * @return the peer's endpoint and epoch as Describe answered (a file segment: this engine's own)
   */
  SegmentDescriptor descriptor();

  /**
   * The ranges the peer published when it was described; a file segment has one, {@link
   * TransferEngine#FILE_REGION_ID}.
   *
   * @return an unmodifiable list, in the order the Describe answer gave them
   */
  List<RemoteRegion> regions();

  /**
   * The published range with id {@code regionId}.
   *
   * @param regionId the region's id
   * @return the range, or empty when the peer did not publish it
   */
  Optional<RemoteRegion> region(long regionId);

  /**
   * The published range registered under {@code name} at the peer ({@link Engine#allocate(long,
   * Access, String)}), as its Describe answer named it. The name only finds the range's id:
   * requests name the id, and the peer checks every request against its live registration (C2).
   * After the peer restarts, the same name may belong to another id; {@link Engine#reopen} gives a
   * segment whose names are the new incarnation's.
   *
   * @param name the region's name
   * @return the range, or empty when the peer published no region under that name (a file segment
   *     has no names; a null name finds nothing)
   */
  Optional<RemoteRegion> region(String name);

  /**
   * The peer engine's name ({@code EngineConfig.name}) as its Describe answer gave it.
   *
   * @return the name; {@code ""} for a file segment and for an engine that does not send its name
   */
  String engineName();

  /**
   * What {@link Engine#reopen} learned: the regions of the segment it reopened whose ids the peer
   * (the incarnation this segment names) no longer publishes. A request naming one of them is
   * refused INVALID_ARGUMENT (an unknown region). Each entry is the old segment's, as that peer
   * described it. Ids still published are not listed, even if the region behind the id is now
   * another one (a restarted peer numbers its allocations afresh): compare with {@link
   * #region(long)} when the length or access matters.
   *
   * @return an unmodifiable list in the old segment's order; empty for a segment opened by {@code
   *     openSegment} or {@code openFileSegment}, and when every region is still published
   */
  List<RemoteRegion> regionsGone();

  /**
   * What messages call this segment: the peer's descriptor, or {@code "file <path>"}.
   *
   * @return the label
   */
  String label();

  /**
   * Whether requests to {@code regionId} can go through SHM (same host, exported, proven openable).
   *
   * @param regionId the region's id
   * @return true when the peer exports that region to this host and its SHM channel is open
   */
  boolean sharedReachable(long regionId);

  /**
   * Why a request to {@code regionId} cannot run over {@code transport}, for the refusal's message
   * (and for a caller that wants to say why SHM is not used).
   *
   * @param transport the transport a request would name
   * @param regionId the region it would name
   * @return a sentence, for example {@code "the peer exports no memory through SHM"}
   */
  String unreachableBecause(Transport transport, long regionId);
}
