package io.orbite.engine;

/**
 * One range a peer published in its Describe answer.
 *
 * @param regionId the id requests name the range by ({@link TransferRequest#regionId()})
 * @param lengthBytes the range's size in bytes when it was described
 * @param access what the peer granted on it then; the peer checks again on every request (C2)
 * @param name the name the peer registered it under ({@link Engine#allocate(long, Access, String)},
 *     {@link Engine#register(java.lang.foreign.MemorySegment, Access, String)}), or {@code null}
 *     when it is unnamed (or the peer's engine sends no names). A name is a way to find the id,
 *     never an authority: requests still name the id, and the peer checks it (C2)
 */
public record RemoteRegion(long regionId, long lengthBytes, Access access, String name) {
  /**
   * An unnamed range.
   *
   * @param regionId the id requests name the range by
   * @param lengthBytes the range's size in bytes when it was described
   * @param access what the peer granted on it then
   */
  public RemoteRegion(long regionId, long lengthBytes, Access access) {
    this(regionId, lengthBytes, access, null);
  }
}
